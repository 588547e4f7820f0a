-- The served OVH API's record ids are stable (issue 29): a record keeps the id the tool was given for
-- as long as it exists — the staged id a POST answered, in listings, GETs, PUTs and DELETEs alike,
-- also after the PUT of a refresh replaced its OVH record. ovh_record_ids becomes the served identity
-- in both directions: served id (the column staged_id: a staged id, or the OVH id of a record the
-- tenant had before OVH gave it another) <-> the OVH record it names now. A record with no row is
-- served under its OVH id. One row per OVH record at most.

-- Two staged ids that came to name one OVH record (a create of a target already there): the newest keeps it.
DELETE FROM ovh_record_ids i
 USING ovh_record_ids j
 WHERE i.zone = j.zone AND i.ovh_id = j.ovh_id AND (i.created_at, i.staged_id) < (j.created_at, j.staged_id);
DROP INDEX ovh_record_ids_ovh_idx;
CREATE UNIQUE INDEX ovh_record_ids_ovh_key ON ovh_record_ids (zone, ovh_id);
CREATE INDEX ovh_record_ids_tenant_idx ON ovh_record_ids (zone, tenant_id);
COMMENT ON TABLE ovh_record_ids IS 'The served OVH API''s ids of records whose OVH id differs (staged_id: the id the tool holds) -> the OVH record each names now; dropped with their record.';
COMMENT ON COLUMN ovh_record_ids.staged_id IS 'The id the served API shows: a staged id, or the OVH id the record had when the tool first saw it.';

-- Staged writes name a record by its served id: an update or delete of a published staged create is
-- staged under the staged id the tool holds (no longer only creates are at or above 4 * 10^15).
UPDATE ovh_drafts d SET record_id = i.staged_id
  FROM ovh_record_ids i
 WHERE d.action <> 'create' AND d.zone = i.zone AND d.tenant_id = i.tenant_id AND d.record_id = i.ovh_id
   AND NOT EXISTS (SELECT 1 FROM ovh_drafts e WHERE e.tenant_id = d.tenant_id AND e.zone = d.zone AND e.record_id = i.staged_id);
ALTER TABLE ovh_drafts DROP CONSTRAINT ovh_drafts_created_ids;
ALTER TABLE ovh_drafts ADD CONSTRAINT ovh_drafts_created_ids CHECK (action <> 'create' OR record_id >= 4000000000000001);
