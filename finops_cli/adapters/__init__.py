"""The only modules that import cloud SDKs (boto3, google-cloud-billing): lazily, with an install hint."""
