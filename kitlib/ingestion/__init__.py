"""Ingest: the pipeline that parses a bundle, the sink it writes into, the Parquet store."""
