"""Deployment: the local production topology, Docker Compose and Kubernetes manifests."""
