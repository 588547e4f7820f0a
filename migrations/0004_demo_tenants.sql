-- Demo mode's mark on the tenants it created itself ("admin" and "demo" of the embedded default).
-- Demo mode only ever rotates the token of a tenant carrying this mark: a tenant of the same name
-- that an operator made (or that predates this migration) is never touched by a demo start.
ALTER TABLE tenants ADD COLUMN demo boolean NOT NULL DEFAULT false;
