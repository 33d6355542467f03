"""REST routes, one module per area."""
