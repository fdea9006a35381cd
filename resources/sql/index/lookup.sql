-- The director index's point lookup (Qserv: which chunk holds this object?).
SELECT `chunkId`, `subChunkId` FROM `{database}`.`{table}` WHERE `{key}` = %s
