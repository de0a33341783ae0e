"""The board server: aiohttp app, services, store."""
