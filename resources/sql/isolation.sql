-- isolation.csv: did each measuring job run alone? One row per job (its results directory).
-- Input view isolation = every results/<run>/{fio,load,queries,restart,cluster}/**/isolation.json
--   written by core/jobs/isolation.py (host, target, slurm_job, slurm_exclusive, start, end, alone,
--   shared_locks, other_catbench_jobs, other_slurm_jobs; lists joined with "; ").
-- alone = false: the job met another measuring job or Slurm job; its figures are not to be trusted.
SELECT
    stage,
    job,
    target,
    alone,
    shared_locks,
    other_catbench_jobs,
    other_slurm_jobs,
    host,
    slurm_job,
    slurm_exclusive,
    round(start, 3)                AS start_epoch_s,
    round("end" - start, 3)        AS seconds
FROM isolation
ORDER BY alone NULLS FIRST, stage, job
