-- Plans, for a service whose plans may each hold thousands of changes:
-- * what a listing shows (the zones, the counts of changes, conflicts and OVH calls) in columns of
--   their own, written with the plan: ListPlans no longer reads every listed plan's body (megabytes
--   each for a large plan) to count them;
-- * the request and the body as json, kept as written: parsing megabytes into jsonb cost about three
--   times the time of storing them, and nothing queries inside them (GetPlan reads them whole).
ALTER TABLE plans
  ADD COLUMN zones           text[]  NOT NULL DEFAULT '{}',
  ADD COLUMN change_count    integer NOT NULL DEFAULT 0,
  ADD COLUMN conflict_count  integer NOT NULL DEFAULT 0,
  ADD COLUMN operation_count integer NOT NULL DEFAULT 0;

-- The plans already stored: the same counts, from their bodies (an array of zone plans; a zone's
-- operations count its refresh too, as listings always showed).
UPDATE plans p
   SET zones = s.zones, change_count = s.changes, conflict_count = s.conflicts, operation_count = s.operations
  FROM (
    SELECT p2.id,
           COALESCE(array_agg(COALESCE(e.z ->> 'zone', '') ORDER BY e.ord) FILTER (WHERE e.z IS NOT NULL), '{}') AS zones,
           COALESCE(sum(CASE WHEN jsonb_typeof(e.z -> 'changes') = 'array' THEN jsonb_array_length(e.z -> 'changes') ELSE 0 END), 0) AS changes,
           COALESCE(sum(CASE WHEN jsonb_typeof(e.z -> 'conflicts') = 'array' THEN jsonb_array_length(e.z -> 'conflicts') ELSE 0 END), 0) AS conflicts,
           COALESCE(sum(CASE WHEN jsonb_typeof(e.z -> 'operations') = 'array' AND jsonb_array_length(e.z -> 'operations') > 0
                             THEN jsonb_array_length(e.z -> 'operations') + 1 ELSE 0 END), 0) AS operations
      FROM plans p2
      LEFT JOIN LATERAL jsonb_array_elements(CASE WHEN jsonb_typeof(p2.body) = 'array' THEN p2.body ELSE '[]'::jsonb END)
           WITH ORDINALITY AS e(z, ord) ON true
     GROUP BY p2.id
  ) s
 WHERE s.id = p.id;

ALTER TABLE plans
  ALTER COLUMN request TYPE json USING request::json,
  ALTER COLUMN body    TYPE json USING body::json,
  ADD CONSTRAINT plans_counts_nonneg CHECK (change_count >= 0 AND conflict_count >= 0 AND operation_count >= 0);
COMMENT ON COLUMN plans.zones IS 'The zones of the plan, in its order (ListPlans).';
COMMENT ON COLUMN plans.operation_count IS 'OVH calls the plan makes, one refresh per zone with changes included.';
