-- One autocommitted batch of the restart workload's inserts: the VALUES list holds one
-- placeholder triple per row.
INSERT INTO `{database}`.`{table}` (`{key}`, `chunkId`, `subChunkId`)
VALUES {values}
