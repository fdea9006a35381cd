-- trans-partitioned: Qserv's consolidation at publishing.
ALTER TABLE `{database}`.`{table}` REMOVE PARTITIONING
