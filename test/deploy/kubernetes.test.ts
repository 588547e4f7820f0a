/**
 * deploy/kubernetes: every manifest validates against the Kubernetes schemas (kubernetes-models for
 * built-in kinds; the model packages of the Prometheus Operator and CloudNativePG for their custom
 * resources); every kustomization names files that exist and leaves no manifest out; the Deployment
 * has what docs/kubernetes.md promises; and every metric the Grafana dashboard and the alert rules
 * use is one that a real dnsplane server's /metrics exports.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { startHarness, type Harness } from '../helpers/server.js';
import { messageOf } from '../../src/lib/error-message.js';

const ROOT = path.resolve('deploy/kubernetes');

interface Manifest {
  file: string;
  doc: Record<string, unknown> & { apiVersion?: string; kind?: string; metadata?: { name?: string; namespace?: string } };
}

interface Validatable {
  validate(): void;
}
type ModelClass = new (data: Record<string, unknown>) => Validatable;

/** Where the model of an apiVersion lives: the package of its group, or none (a test failure). */
function modelModule(apiVersion: string): string | undefined {
  const [group, version] = apiVersion.includes('/') ? apiVersion.split('/') : ['', apiVersion];
  if (group === 'monitoring.coreos.com') return `@kubernetes-models/prometheus-operator/${group}/${version}`;
  if (group === 'postgresql.cnpg.io') return `@kubernetes-models/cloudnative-pg/${group}/${version}`;
  if (group === '' || /^[a-z.]*(k8s\.io)?$/.test(group!)) return group ? `kubernetes-models/${group}/${version}` : `kubernetes-models/${version}`;
  return undefined;
}

/** The JSON pointers (instancePath) of the schema errors of a document; [] when it is valid. */
function errorPaths(Model: ModelClass, doc: unknown): string[] {
  try {
    new Model(doc as Record<string, unknown>).validate();
    return [];
  } catch (e) {
    const errors = (e as { errors?: Array<{ instancePath: string }> }).errors;
    if (!errors) throw e;
    return errors.map((x) => x.instancePath);
  }
}

const PROBE = Symbol('not a JSON value');

/**
 * Fields the schema does not know (what `kubectl apply --validate=strict` refuses; the compiled
 * schemas ignore unknown properties): each field in turn is replaced by a value no JSON schema type
 * accepts; when the schema reports no error at that field, it does not describe it. The schema
 * decides, field by field: nothing is listed by hand.
 */
function unknownFields(Model: ModelClass, doc: Record<string, unknown>): string[] {
  const unknown: string[] = [];
  const pointer = (at: Array<string | number>) => `/${at.map((s) => String(s).replace(/~/g, '~0').replace(/\//g, '~1')).join('/')}`;
  const visit = (value: unknown, at: Array<string | number>): void => {
    if (Array.isArray(value)) {
      for (const [i, v] of value.entries()) visit(v, [...at, i]);
      return;
    }
    if (value === null || typeof value !== 'object') return;
    for (const key of Object.keys(value)) {
      const here = [...at, key];
      const probe = structuredClone(doc);
      let parent: any = probe;
      for (const seg of at) parent = parent[seg];
      parent[key] = PROBE;
      const ptr = pointer(here);
      if (errorPaths(Model, probe).some((p) => p === ptr || p.startsWith(`${ptr}/`))) visit((value as Record<string, unknown>)[key], here);
      else unknown.push(ptr);
    }
  };
  visit(doc, []);
  return unknown;
}

async function validate(m: Manifest): Promise<void> {
  const { apiVersion, kind } = m.doc;
  const where = `${m.file}: ${kind ?? '(no kind)'} ${m.doc.metadata?.name ?? '(no name)'}`;
  if (typeof apiVersion !== 'string' || typeof kind !== 'string') throw new Error(`${where}: apiVersion and kind are required`);
  const mod = modelModule(apiVersion);
  if (!mod) throw new Error(`${where}: no schema package for ${apiVersion}`);
  const exports = (await import(mod)) as Record<string, ModelClass | undefined>;
  const Model = exports[kind];
  if (!Model) throw new Error(`${where}: ${mod} has no model ${kind}`);
  try {
    new Model(m.doc).validate();
  } catch (e) {
    throw new Error(`${where}: ${messageOf(e)}`);
  }
  const unknown = unknownFields(Model, m.doc);
  if (unknown.length) throw new Error(`${where}: fields the ${apiVersion} ${kind} schema does not know: ${unknown.join(', ')}`);
}

function walk(dir: string): string[] {
  return readdirSync(dir).flatMap((n) => {
    const p = path.join(dir, n);
    return statSync(p).isDirectory() ? walk(p) : [p];
  });
}

const yamlFiles = walk(ROOT).filter((f) => /\.ya?ml$/.test(f));
const kustomizations = yamlFiles.filter((f) => path.basename(f) === 'kustomization.yaml');

function load(file: string): Manifest[] {
  return parseAllDocuments(readFileSync(file, 'utf8')).map((d) => {
    if (d.errors.length) throw new Error(`${file}: ${d.errors[0]!.message}`);
    return { file: path.relative(ROOT, file), doc: d.toJS() as Manifest['doc'] };
  });
}

const manifests: Manifest[] = yamlFiles.filter((f) => !kustomizations.includes(f)).flatMap(load);

describe('manifests', () => {
  it('there are manifests for every part (dnsplane, monitoring, postgres, external-dns central and sidecar)', () => {
    const kinds = manifests.map((m) => `${m.file.split('/')[0]}/${m.doc.kind}`);
    for (const k of [
      'dnsplane/Deployment',
      'dnsplane/Service',
      'dnsplane/PodDisruptionBudget',
      'dnsplane/NetworkPolicy',
      'dnsplane/ConfigMap',
      'dnsplane/Secret',
      'monitoring/ServiceMonitor',
      'monitoring/PrometheusRule',
      'postgres/Cluster',
      'external-dns/Deployment',
    ]) {
      expect(kinds).toContain(k);
    }
  });

  it.each(manifests.map((m) => [`${m.file} ${m.doc.kind} ${m.doc.metadata?.name}`, m] as const))('%s validates against its schema', async (_, m) => {
    await validate(m);
  });

  it('the validation is strict: a misspelt field, a wrong type, a missing required field are refused', async () => {
    const deployment = manifests.find((m) => m.doc.kind === 'Deployment' && m.file.startsWith('dnsplane/'))!;
    const spec = deployment.doc.spec as Record<string, unknown>;
    await expect(validate({ ...deployment, doc: { ...deployment.doc, spec: { ...spec, replicas: 'three' } } })).rejects.toThrow(/replicas/);
    await expect(validate({ ...deployment, doc: { ...deployment.doc, spec: { ...spec, replica: 3 } } })).rejects.toThrow(/does not know: \/spec\/replica$/);
    const template = spec.template as { spec: { containers: Array<Record<string, unknown>> } };
    const typo = structuredClone(deployment.doc) as any;
    typo.spec.template.spec.containers[0].livenesProbe = template.spec.containers[0]!.livenessProbe;
    await expect(validate({ ...deployment, doc: typo })).rejects.toThrow(/\/spec\/template\/spec\/containers\/0\/livenesProbe/);
    const { selector: _, ...noSelector } = spec;
    await expect(validate({ ...deployment, doc: { ...deployment.doc, spec: noSelector } })).rejects.toThrow(/selector/);
    const rule = manifests.find((m) => m.doc.kind === 'PrometheusRule')!;
    await expect(validate({ ...rule, doc: { ...rule.doc, spec: { groups: [{ rules: [] }] } } })).rejects.toThrow(/name/);
    const cluster = manifests.find((m) => m.doc.kind === 'Cluster')!;
    await expect(validate({ ...cluster, doc: { ...cluster.doc, spec: { ...(cluster.doc.spec as object), instances: 0 } } })).rejects.toThrow(/instances/);
    await expect(validate({ ...cluster, doc: { ...cluster.doc, spec: { ...(cluster.doc.spec as object), instance: 3 } } })).rejects.toThrow(
      /\/spec\/instance\b/,
    );
    const monitor = manifests.find((m) => m.doc.kind === 'ServiceMonitor')!;
    const badMonitor = structuredClone(monitor.doc) as any;
    badMonitor.spec.endpoints[0].pth = '/metrics';
    await expect(validate({ ...monitor, doc: badMonitor })).rejects.toThrow(/\/spec\/endpoints\/0\/pth/);
  });

  it('every kustomization names files and directories that exist, and no manifest is left out', () => {
    const listed = new Set<string>();
    for (const k of kustomizations) {
      const dir = path.dirname(k);
      const kz = load(k)[0]!.doc as { resources?: string[]; configMapGenerator?: Array<{ files?: string[] }> };
      for (const r of kz.resources ?? []) {
        const p = path.resolve(dir, r);
        expect(existsSync(p), `${path.relative(ROOT, k)}: ${r} does not exist`).toBe(true);
        if (statSync(p).isDirectory()) expect(existsSync(path.join(p, 'kustomization.yaml')), `${r} has no kustomization.yaml`).toBe(true);
        listed.add(p);
      }
      for (const g of kz.configMapGenerator ?? []) {
        for (const f of g.files ?? []) {
          const p = path.resolve(dir, f.replace(/^[^=]*=/, ''));
          expect(existsSync(p), `${path.relative(ROOT, k)}: ${f} does not exist`).toBe(true);
          listed.add(p);
        }
      }
    }
    for (const f of yamlFiles) {
      if (kustomizations.includes(f) || f.endsWith('.example.yaml')) continue;
      expect(listed.has(f), `${path.relative(ROOT, f)} is in no kustomization`).toBe(true);
    }
    const json = walk(ROOT).filter((f) => f.endsWith('.json'));
    for (const f of json) expect(listed.has(f), `${path.relative(ROOT, f)} is in no generator`).toBe(true);
  });

  it('dnsplane: 3 replicas, probes on /healthz and /readyz, a startup probe, requests, Secrets for OVH, DATABASE_URL and DNSPLANE_SECRETS_KEY', () => {
    const d = manifests.find((m) => m.doc.kind === 'Deployment' && m.file === 'dnsplane/deployment.yaml')!.doc as any;
    expect(d.spec.replicas).toBe(3);
    const c = d.spec.template.spec.containers[0];
    expect(c.livenessProbe.httpGet.path).toBe('/healthz');
    expect(c.readinessProbe.httpGet.path).toBe('/readyz');
    expect(c.startupProbe.httpGet.path).toBe('/healthz');
    expect(c.resources.requests).toMatchObject({ cpu: expect.any(String), memory: expect.any(String) });
    const fromSecret = Object.fromEntries(
      (c.env as Array<{ name: string; valueFrom?: { secretKeyRef?: { name: string } } }>)
        .filter((e) => e.valueFrom?.secretKeyRef)
        .map((e) => [e.name, e.valueFrom!.secretKeyRef!.name]),
    );
    expect(fromSecret).toEqual({
      DATABASE_URL: 'dnsplane-db-app',
      OVH_APPLICATION_KEY: 'dnsplane-ovh',
      OVH_APPLICATION_SECRET: 'dnsplane-ovh',
      OVH_CONSUMER_KEY: 'dnsplane-ovh',
      DNSPLANE_SECRETS_KEY: 'dnsplane-secrets',
    });
    // The Secrets the Deployment reads exist as examples with those keys (they are created by hand, not applied).
    const secretKeys = (name: string) => Object.keys((manifests.find((m) => m.doc.kind === 'Secret' && m.doc.metadata?.name === name)!.doc as any).stringData);
    expect(secretKeys('dnsplane-secrets')).toEqual(['DNSPLANE_SECRETS_KEY']);
    expect(secretKeys('dnsplane-ovh')).toEqual(['OVH_APPLICATION_KEY', 'OVH_APPLICATION_SECRET', 'OVH_CONSUMER_KEY']);
    // The Secret CloudNativePG writes for the Cluster's owner is <cluster>-app.
    const cluster = manifests.find((m) => m.doc.kind === 'Cluster')!.doc;
    expect(`${cluster.metadata!.name}-app`).toBe('dnsplane-db-app');
    const svc = manifests.find((m) => m.doc.kind === 'Service' && m.file === 'dnsplane/service.yaml')!.doc as any;
    expect((svc.spec.ports as Array<{ port: number }>).map((p) => p.port).sort()).toEqual([8080, 8888]);
    // The DNS door: port 53 over UDP and TCP, to the container's DNSPLANE_DNS_LISTEN port.
    const dns = manifests.find((m) => m.doc.kind === 'Service' && m.file === 'dnsplane/service-dns.yaml')!.doc as any;
    expect(
      (dns.spec.ports as Array<{ port: number; protocol: string; targetPort: string }>).map((p) => `${p.port}/${p.protocol}->${p.targetPort}`).sort(),
    ).toEqual(['53/TCP->dns-tcp', '53/UDP->dns-udp']);
    const ports = Object.fromEntries(
      (c.ports as Array<{ name: string; containerPort: number; protocol: string }>).map((p) => [p.name, `${p.containerPort}/${p.protocol}`]),
    );
    expect(ports).toMatchObject({ 'dns-udp': '5353/UDP', 'dns-tcp': '5353/TCP' });
    // Nothing secret in the ConfigMap.
    const cm = manifests.find((m) => m.doc.kind === 'ConfigMap' && m.file.startsWith('dnsplane/'))!.doc as any;
    expect(Object.keys(cm.data).filter((k) => /SECRET|CONSUMER|APPLICATION_KEY|DATABASE_URL|TOKEN/.test(k))).toEqual([]);
    expect(cm.data.DNSPLANE_DNS_LISTEN).toBe('0.0.0.0:5353');
  });

  it("the external-dns sidecar holds no secret of dnsplane's: its --token-file is a projected ServiceAccount token, audience dnsplane, 600 s", () => {
    const d = manifests.find((m) => m.doc.kind === 'Deployment' && m.file === 'external-dns/sidecar/deployment.yaml')!.doc as any;
    const spec = d.spec.template.spec;
    const sidecar = spec.containers.find((c: { name: string }) => c.name === 'dnsplane-webhook');
    const tokenFile = sidecar.args[sidecar.args.indexOf('--token-file') + 1] as string;
    const mount = (sidecar.volumeMounts as Array<{ name: string; mountPath: string }>).find((v) => tokenFile.startsWith(`${v.mountPath}/`))!;
    const volume = (spec.volumes as Array<{ name: string; projected?: { sources: Array<{ serviceAccountToken?: unknown }> }; secret?: unknown }>).find(
      (v) => v.name === mount.name,
    )!;
    expect(volume.secret).toBeUndefined();
    expect(volume.projected!.sources).toEqual([
      { serviceAccountToken: { audience: 'dnsplane', expirationSeconds: 600, path: tokenFile.slice(mount.mountPath.length + 1) } },
    ]);
    expect(spec.serviceAccountName).toBe('external-dns');
    expect(manifests.filter((m) => m.file.startsWith('external-dns/sidecar/') && m.doc.kind === 'Secret')).toEqual([]);
  });
});

// --- kubectl kustomize, where kubectl is installed ---------------------------------------------

const kubectl = (() => {
  try {
    execFileSync('kubectl', ['version', '--client'], { stdio: 'pipe' });
    return true;
  } catch {
    return false;
  }
})();

describe.skipIf(!kubectl)('kubectl kustomize (skipped where kubectl is not on the PATH)', () => {
  it.each(kustomizations.map((k) => path.relative(ROOT, path.dirname(k)) || '.'))('renders %s into valid manifests', async (dir) => {
    const out = execFileSync('kubectl', ['kustomize', path.join(ROOT, dir)], { encoding: 'utf8' });
    const docs = parseAllDocuments(out).map((d) => ({ file: `kustomize ${dir}`, doc: d.toJS() as Manifest['doc'] }));
    expect(docs.length).toBeGreaterThan(0);
    for (const m of docs) await validate(m);
  });
});

// --- metrics used by the dashboard and the alerts ------------------------------------------------

/** Series Prometheus adds itself to every target; not exported by any /metrics. */
const PROMETHEUS_OWN = new Set(['up']);

/** Metric names in a PromQL expression: identifiers of our series families (dnsplane_, process_, nodejs_) and `up`. */
function metricNames(expr: string): string[] {
  const withoutStrings = expr.replace(/"(?:[^"\\]|\\.)*"/g, '""');
  return [...new Set([...withoutStrings.matchAll(/\b(dnsplane_[a-z0-9_]+|process_[a-z0-9_]+|nodejs_[a-z0-9_]+|up)\b(?!\s*\()/g)].map((m) => m[1]!))];
}

describe('metrics of the dashboard and the alert rules', () => {
  let h: Harness;
  let exported: Set<string>;

  beforeAll(async () => {
    h = await startHarness({ zones: { 'example.com': [] } });
    const text = await (await fetch(`${h.server.url}/metrics`)).text();
    exported = new Set<string>();
    for (const m of text.matchAll(/^# TYPE (\S+) (\S+)$/gm)) {
      const [name, type] = [m[1]!, m[2]!];
      exported.add(name);
      if (type === 'histogram') for (const s of ['_bucket', '_sum', '_count']) exported.add(name + s);
      if (type === 'summary') for (const s of ['_sum', '_count']) exported.add(name + s);
    }
  });
  afterAll(async () => {
    await h?.close();
  });

  const dashboard = JSON.parse(readFileSync(path.join(ROOT, 'monitoring/dnsplane-dashboard.json'), 'utf8')) as {
    panels: Array<{ title: string; type: string; targets?: Array<{ expr: string }> }>;
    templating: { list: Array<{ name: string; definition?: string }> };
  };
  const dashboardExprs = [
    ...dashboard.panels.flatMap((p) => (p.targets ?? []).map((t) => ({ where: `panel "${p.title}"`, expr: t.expr }))),
    ...dashboard.templating.list.filter((v) => v.definition).map((v) => ({ where: `variable ${v.name}`, expr: v.definition! })),
  ];
  const rule = manifests.find((m) => m.doc.kind === 'PrometheusRule')!.doc as { spec: { groups: Array<{ rules: Array<{ alert?: string; expr: string }> }> } };
  const ruleExprs = rule.spec.groups.flatMap((g) => g.rules.map((r) => ({ where: `alert ${r.alert}`, expr: String(r.expr) })));

  it('every dashboard panel queries something, and every query names a metric', () => {
    const graphs = dashboard.panels.filter((p) => p.type !== 'row');
    expect(graphs.length).toBeGreaterThan(10);
    for (const p of graphs) expect(p.targets?.length, p.title).toBeGreaterThan(0);
    for (const { where, expr } of dashboardExprs) expect(metricNames(expr), `${where}: ${expr}`).not.toEqual([]);
  });

  it('the alert rules cover apply failures, OVH 429 and 5xx, lock waits, drift found, rollbacks left in flight, changes that stay invisible and silent tenants', () => {
    const used = new Set(ruleExprs.flatMap((r) => metricNames(r.expr)));
    for (const m of [
      'dnsplane_apply_duration_seconds_count',
      'dnsplane_ovh_requests_total',
      'dnsplane_lock_wait_seconds_bucket',
      'dnsplane_drift_records_total',
      'dnsplane_journal_in_flight_oldest_seconds',
      'dnsplane_visibility_final_total',
      'dnsplane_visibility_seconds_bucket',
      'dnsplane_tenant_last_seen_seconds',
    ]) {
      expect(used).toContain(m);
    }
    expect(ruleExprs.map((r) => r.expr).join('\n')).toMatch(/status="429"/);
    expect(ruleExprs.map((r) => r.expr).join('\n')).toMatch(/status=~"5\.\./);
    expect(ruleExprs.map((r) => r.expr).join('\n')).toMatch(/state=~"not_visible\|unverified"/);
    expect(rule.spec.groups.flatMap((g) => g.rules.map((r) => r.alert))).toContain('DnsplaneTenantSilent');
  });

  it('the health alerts (docs/failover.md): a target failing its check, every target of a set failing (fail open)', () => {
    const byName = new Map(rule.spec.groups.flatMap((g) => g.rules).map((r) => [r.alert, r.expr] as const));
    expect(metricNames(String(byName.get('DnsplaneTargetDown')))).toEqual(['dnsplane_target_health']);
    expect(metricNames(String(byName.get('DnsplaneAllTargetsDown')))).toEqual(['dnsplane_target_set_all_down']);
  });

  it('every metric they use is one /metrics exports', () => {
    const missing: string[] = [];
    for (const { where, expr } of [...dashboardExprs, ...ruleExprs]) {
      for (const name of metricNames(expr)) if (!exported.has(name) && !PROMETHEUS_OWN.has(name)) missing.push(`${where}: ${name}`);
    }
    expect(missing).toEqual([]);
  });
});
