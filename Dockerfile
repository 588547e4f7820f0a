# The same steps as CI: npm ci, type-check, lint, then run the sources through tsx.
FROM node:20-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY . .
RUN npm run typecheck && npm run lint && npm prune --omit=dev

FROM node:20-bookworm-slim
ENV NODE_ENV=production \
    DNSPLANE_LISTEN=0.0.0.0:8080 \
    DNSPLANE_WEBHOOK_LISTEN=0.0.0.0:8888 \
    DNSPLANE_DNS_LISTEN=0.0.0.0:5353 \
    DNSPLANE_DATA_DIR=/var/lib/dnsplane
WORKDIR /app
COPY --from=build /app /app
RUN mkdir -p /var/lib/dnsplane && chown node:node /var/lib/dnsplane
USER node
# 5353: the DNS door (UPDATE with TSIG, AXFR), UDP and TCP, as in deploy/kubernetes (Service port 53).
EXPOSE 8080 8888 5353/tcp 5353/udp
HEALTHCHECK --interval=10s --timeout=3s CMD node -e "fetch('http://127.0.0.1:8080/healthz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"
ENTRYPOINT ["node", "bin/dnsplane.js"]
CMD ["serve"]
