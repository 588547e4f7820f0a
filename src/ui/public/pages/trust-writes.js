// The Tenants page's workload identities (an admin's writes): trust a subject of a JWT issuer — a
// Kubernetes ServiceAccount's projected token, a SPIRE JWT-SVID — so that its tokens act as the
// tenant instead of a dnsplane token (AdminService.TrustSubject), and untrust it (UntrustSubject).
// Nothing here is secret: issuers, subjects, public keys. Each opens write.js's dialog and redraws
// the page after success.
import { h } from '../dom.js';
import { field, writeDialog } from '../write.js';

const text = (id, placeholder) => h('input', { id, 'data-testid': id, type: 'text', autocomplete: 'off', spellcheck: 'false', placeholder });

/** The writes, drawn into `page`; refresh() redraws the view. */
export function trustWrites(page, { refresh }) {
  const trust = (t) => {
    const issuer = text('tr-issuer', "https://oidc.example.com/id/cluster1 (the tokens' iss, exactly)");
    const subject = text('tr-subject', 'system:serviceaccount:external-dns:external-dns');
    const audience = text('tr-audience', 'dnsplane');
    const jwksUrl = text('tr-jwks-url', 'optional: https://…/openid/v1/jwks');
    const jwks = h('textarea', {
      id: 'tr-jwks',
      'data-testid': 'tr-jwks',
      rows: '3',
      spellcheck: 'false',
      placeholder: 'optional: kubectl get --raw /openid/v1/jwks',
    });
    const ca = h('textarea', { id: 'tr-ca', 'data-testid': 'tr-ca', rows: '3', spellcheck: 'false', placeholder: 'optional: -----BEGIN CERTIFICATE-----…' });
    writeDialog(page, {
      title: `Trust a workload identity for ${t.name}`,
      testid: 'dialog-trust-subject',
      fields: [
        field(
          'Issuer',
          issuer,
          "The cluster's service-account issuer (kubectl get --raw /.well-known/openid-configuration), or SPIRE's OIDC discovery provider.",
        ),
        field('Subject', subject, 'system:serviceaccount:NAMESPACE:NAME, or a SPIFFE ID; it acts as exactly one tenant.'),
        field('Audience', audience, 'The audience of the projected token (its aud); empty: dnsplane.'),
        field('JWKS URL', jwksUrl, "Where the issuer's keys are, when not in its discovery document."),
        field('JWKS', jwks, "The issuer's keys themselves, for an issuer dnsplane cannot reach (upload again when they change)."),
        field('CA', ca, "The CA of the issuer's HTTPS, when not a public one."),
      ],
      read: () => ({
        tenant: t.name,
        issuer: issuer.value.trim(),
        subject: subject.value.trim(),
        audience: audience.value.trim(),
        jwksUrl: jwksUrl.value.trim(),
        jwks: jwks.value.trim(),
        caPem: ca.value.trim(),
      }),
      describe: (r) => [
        `let tokens that ${r.issuer || '(no issuer)'} signs for ${r.subject || '(no subject)'} with the audience "${r.audience || 'dnsplane'}" act as tenant "${t.name}"`,
        r.jwks
          ? "; the issuer's keys from the JWKS given"
          : r.jwksUrl
            ? `; the issuer's keys from ${r.jwksUrl}`
            : "; the issuer's keys from its discovery document (unless set before)",
        r.jwks || r.jwksUrl || r.caPem ? ', for every tenant trusting that issuer.' : '.',
      ],
      method: 'TrustSubject',
      verb: 'Trust',
      result: (a) => h('p', { 'data-testid': 'trusted' }, `Tenant "${a.trusted.tenant}" trusts ${a.trusted.subject}; keys: ${a.trusted.keys}.`),
      refresh,
    });
  };

  const untrust = (s) =>
    writeDialog(page, {
      title: `Untrust ${s.subject}`,
      testid: 'dialog-untrust-subject',
      read: () => ({ tenant: s.tenant, issuer: s.issuer, subject: s.subject }),
      describe: () => `stop tokens of ${s.subject} (issuer ${s.issuer}) acting as tenant "${s.tenant}": refused at once, on every replica.`,
      method: 'UntrustSubject',
      verb: 'Untrust',
      danger: true,
      refresh,
    });

  return { trust, untrust };
}
