"""The file formats a user writes (import records, study settings, the people CSV) and reads (export records), as
JSON Schemas: served at /api/schema/formats/ and copied to docs/reference/schemas/ (the ``format_schemas``
command writes the copies; a test checks them and the importers' field lists against these)."""
