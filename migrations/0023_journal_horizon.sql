-- Pruning the journal (`dnsplane journal prune`): finished rows older than a horizon are deleted, in
-- batches; in_flight rows never. Per zone, what `dnsplane zone at` (AdminService.ExportZone at a past
-- generation or time) can no longer undo: the time rows were pruned before, and the highest generation
-- of the zone's applies pruned. Written, raised only, in the transaction that starts a prune, before
-- any row goes; read in the snapshot `zone at` reads the journal in.
CREATE TABLE journal_horizon (
  zone          text        PRIMARY KEY,
  pruned_before timestamptz NOT NULL,
  generation    bigint,
  pruned_at     timestamptz NOT NULL DEFAULT now()
);
COMMENT ON TABLE journal_horizon IS 'Per zone, how far back its journal reaches after a prune: zone at refuses a time before pruned_before or a generation below generation.';
COMMENT ON COLUMN journal_horizon.generation IS 'The highest generation (result.generation) of the zone''s applies pruned; NULL: none carried one.';
