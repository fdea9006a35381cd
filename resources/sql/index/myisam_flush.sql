-- MyISAM: write the key cache's changed index blocks to the .MYI files and close the
-- tables, so that the table's bytes on disk are all its rows and keys when measured.
FLUSH TABLES
