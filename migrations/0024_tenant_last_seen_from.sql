-- Where a tenant's latest call came from (issue 41): the client's address as the door saw it — behind a
-- trusted proxy (DNSPLANE_TRUSTED_PROXIES) the client's, not the proxy's. Written with last_seen_at,
-- coarsely (core/withdrawals/liveness.ts); NULL: never seen, or seen before this column.
ALTER TABLE tenants ADD COLUMN last_seen_from text;
