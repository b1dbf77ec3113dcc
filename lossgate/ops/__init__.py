"""Operating memory: the tools an operator runs beside the library's read and write paths
(daily metrics, diagnosis, artifact migration, the report) and the consolidation workers
that drain the rebuild queue. Each module holds one tool."""
