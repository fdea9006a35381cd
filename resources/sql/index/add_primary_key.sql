-- deferred-pk: the primary key built after the load (a sort-based rebuild).
ALTER TABLE `{database}`.`{table}` ADD PRIMARY KEY (`{key}`)
