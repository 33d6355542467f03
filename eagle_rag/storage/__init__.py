"""Object stores for originals and image tiles: a local directory or S3 / MinIO."""
