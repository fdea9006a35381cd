-- trans-partitioned, on resume: the batch's partition may have been added before the interruption.
SELECT COUNT(*) FROM information_schema.PARTITIONS
WHERE TABLE_SCHEMA = '{database}' AND TABLE_NAME = '{table}' AND PARTITION_NAME = 'p{trans_id}'
