"""The building blocks every importer uses: problems and the report, limits, typed field reads, sources (zip or
folder), bulk inserts, images. The importers themselves live with their kind of work; annotate.imports runs them."""
