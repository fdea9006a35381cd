-- trans-partitioned: a new super-transaction gets its own partition.
ALTER TABLE `{database}`.`{table}` ADD PARTITION (PARTITION `p{trans_id}` VALUES IN ({trans_id}))
