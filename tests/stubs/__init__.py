"""Local stand-ins for remote services, so tests never need the network."""
