# Three stages; .ci/image-dir runs the same steps in temporary directories, without docker.
# deps: the runtime's dependencies only (no tsx, esbuild, TypeScript or any dev dependency).
FROM node:20-bookworm-slim AS deps
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund

# build: the same checks as CI (type-check, lint), then `npm run build` emits src/ as JavaScript into dist/.
FROM node:20-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY . .
RUN npm run typecheck && npm run lint && npm run build

# runtime: node on dist/ (bin/dnsplane.js), the migrations it applies, and the runtime's node_modules.
FROM node:20-bookworm-slim
ENV NODE_ENV=production \
    DNSPLANE_LISTEN=0.0.0.0:8080 \
    DNSPLANE_WEBHOOK_LISTEN=0.0.0.0:8888 \
    DNSPLANE_DNS_LISTEN=0.0.0.0:5353 \
    DNSPLANE_DATA_DIR=/var/lib/dnsplane
WORKDIR /app
COPY package.json ./
COPY migrations ./migrations
COPY bin/dnsplane.js bin/pretenuring.js ./bin/
COPY --from=deps /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
RUN mkdir -p /var/lib/dnsplane && chown node:node /var/lib/dnsplane
USER node
# 5353: the DNS door (UPDATE with TSIG, AXFR), UDP and TCP, as in deploy/kubernetes (Service port 53).
EXPOSE 8080 8888 5353/tcp 5353/udp
HEALTHCHECK --interval=10s --timeout=3s CMD node -e "fetch('http://127.0.0.1:8080/healthz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"
ENTRYPOINT ["node", "bin/dnsplane.js"]
CMD ["serve"]
