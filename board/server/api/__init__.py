"""The JSON API: handlers parse, call a service with the principal, and render JSON."""
