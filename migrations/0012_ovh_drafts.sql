-- The draft of the OVH API dnsplane serves (/ovh/1.0): on OVH, record calls edit a draft of the zone
-- that POST …/refresh publishes. Here each tenant has its own draft per zone — the writes its tools
-- staged, visible to its own later reads — and its refresh publishes them as one apply through core.
-- A staged write that no refresh published within DNSPLANE_OVH_API_DRAFT_TTL expires.

-- Ids handed out for staged creates: above any OVH record id (OVH's are near 5 * 10^9) and below 2^53,
-- so that clients that read ids as JSON numbers in doubles (JavaScript) keep them exact.
CREATE SEQUENCE ovh_draft_ids AS bigint START WITH 4000000000000001 MINVALUE 4000000000000001 MAXVALUE 9007199254740991 NO CYCLE;

-- Each staged write's revision: a refresh drops exactly the revisions it published.
CREATE SEQUENCE ovh_draft_revisions AS bigint;

CREATE TABLE ovh_drafts (
  tenant_id  bigint      NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
  zone       text        NOT NULL REFERENCES zones (name) ON DELETE CASCADE,
  -- A staged id (action create) or the OVH id of a published record (update, delete).
  record_id  bigint      NOT NULL,
  action     text        NOT NULL,
  -- The record as it will be (create, update); NULL for a delete.
  sub_domain text,
  field_type text,
  target     text,
  ttl        integer,
  -- Whether the write set the TTL (a refresh gives the record set the TTL of its latest write that did).
  ttl_set    boolean     NOT NULL DEFAULT false,
  revision   bigint      NOT NULL DEFAULT nextval('ovh_draft_revisions'),
  staged_at  timestamptz NOT NULL DEFAULT clock_timestamp(),
  expires_at timestamptz NOT NULL,
  PRIMARY KEY (tenant_id, zone, record_id),
  CONSTRAINT ovh_drafts_action_check CHECK (action IN ('create', 'update', 'delete')),
  CONSTRAINT ovh_drafts_record_check CHECK (
    (action = 'delete') = (sub_domain IS NULL) AND (sub_domain IS NULL) = (field_type IS NULL)
    AND (field_type IS NULL) = (target IS NULL) AND (target IS NULL) = (ttl IS NULL)
  ),
  CONSTRAINT ovh_drafts_created_ids CHECK ((action = 'create') = (record_id >= 4000000000000001)),
  CONSTRAINT ovh_drafts_ttl_nonneg CHECK (ttl >= 0)
);
CREATE INDEX ovh_drafts_expires_idx ON ovh_drafts (expires_at);
COMMENT ON TABLE ovh_drafts IS 'Writes staged through the served OVH API, per tenant and zone, until its refresh publishes them (one apply) or they expire.';

-- A staged create, once published, became an OVH record: its staged id keeps working for the tenant
-- that holds it (a client deletes by the id its POST answered), for as long as that record exists.
CREATE TABLE ovh_record_ids (
  zone       text        NOT NULL REFERENCES zones (name) ON DELETE CASCADE,
  staged_id  bigint      NOT NULL,
  tenant_id  bigint      NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
  ovh_id     bigint      NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (zone, staged_id)
);
CREATE INDEX ovh_record_ids_ovh_idx ON ovh_record_ids (zone, ovh_id);
COMMENT ON TABLE ovh_record_ids IS 'Staged ids of the served OVH API mapped to the OVH records they became at refresh; dropped with their record.';
