-- HV3: density, count and mean position per chunk (DMTR-21 3.3.6). Per chunk: count and
-- sums; the merge turns sums into means (what Qserv's aggregate rewriting does).
-- place: 6
-- params:
-- dispatch: all
-- order: chunkId
-- @query
SELECT chunkId, COUNT(*) AS n, AVG(ra_PS) AS avg_ra, AVG(decl_PS) AS avg_decl
FROM Object GROUP BY chunkId
-- @chunk
SELECT chunkId, COUNT(*) AS n, SUM(ra_PS) AS sum_ra, SUM(decl_PS) AS sum_decl
FROM {Object} GROUP BY chunkId
-- @merge
SELECT chunkId, CAST(SUM(n) AS BIGINT) AS n, SUM(sum_ra) / SUM(n) AS avg_ra,
       SUM(sum_decl) / SUM(n) AS avg_decl
FROM partials GROUP BY chunkId
