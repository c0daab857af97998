"""The HTTP side of the daemon that only reads: the aiohttp server setup, health, metrics and the review API."""
