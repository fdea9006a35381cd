-- The director index as Qserv builds it at ingest (replica/HttpIngestModule, _createDirectorIndex):
-- the super-transaction id first, a unique key per partition, no primary key, one LIST
-- partition per transaction starting with p0; the engine is InnoDB as in Qserv, or ROCKSDB.
CREATE TABLE `{database}`.`{table}` (`qserv_trans_id` INT NOT NULL, {columns},
  UNIQUE KEY `trans_key` (`qserv_trans_id`, `{key}`), KEY `key` (`{key}`))
ENGINE={engine} DEFAULT CHARSET=latin1
PARTITION BY LIST (`qserv_trans_id`) (PARTITION `p0` VALUES IN (0))
