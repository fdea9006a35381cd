-- query_chunks.csv: per target and HV/SHV query (mysql engine: one query per chunk, as
-- Qserv runs it), warm runs: the slowest chunk's share of the run's summed chunk time
-- (median over the runs, and its min/max), the chunk that was slowest most often, and
-- whether it is the largest chunk the query reads (most Object+Source rows, from
-- chunks.csv; a box query reads a few) as DMTR-21 saw one very large chunk dominate the HV
-- runs.
-- Input views query_chunk_runs = results/<run>/queries/<target>/mysql/chunk_times.parquet,
-- chunk_stats = results/<run>/chunks/chunks.tsv.
WITH runs AS (
    SELECT target, query, run, sum(seconds) AS total_s, max(seconds) AS slowest_s,
           arg_max(chunkId, seconds) AS slowest_chunk, count(*) AS chunks
    FROM query_chunk_runs
    WHERE cache = 'warm' AND (query LIKE 'HV%' OR query LIKE 'SHV%')
    GROUP BY target, query, run
), largest AS (
    SELECT q.target, q.query,
           arg_max(q.chunkId, coalesce(c.object_rows, 0) + coalesce(c.source_rows, 0)) AS chunkId
    FROM (SELECT DISTINCT target, query, chunkId FROM query_chunk_runs WHERE cache = 'warm') AS q
    JOIN chunk_stats AS c USING (chunkId)
    GROUP BY q.target, q.query
)
SELECT
    r.target,
    r.query,
    count(*)                                              AS n,
    max(r.chunks)                                         AS chunks,
    round(median(r.total_s), 4)                           AS chunk_seconds,
    round(median(r.slowest_s), 4)                         AS slowest_seconds,
    round(median(r.slowest_s / nullif(r.total_s, 0)), 4)  AS slowest_share,
    round(min(r.slowest_s / nullif(r.total_s, 0)), 4)     AS slowest_share_min,
    round(max(r.slowest_s / nullif(r.total_s, 0)), 4)     AS slowest_share_max,
    round(1.0 / max(r.chunks), 4)                         AS even_share,
    mode(r.slowest_chunk)                                 AS slowest_chunk,
    any_value(l.chunkId)                                  AS largest_chunk,
    mode(r.slowest_chunk) = any_value(l.chunkId)          AS slowest_is_largest
FROM runs AS r
LEFT JOIN largest AS l USING (target, query)
GROUP BY r.target, r.query
ORDER BY r.query, r.target
