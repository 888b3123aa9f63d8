"""One module per backend. Import them through ``models_runtime.registry`` so heavy ones load lazily."""
