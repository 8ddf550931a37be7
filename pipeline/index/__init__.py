"""DuckDB storage: the pipeline's state database and the published recall index."""
