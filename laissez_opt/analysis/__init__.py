"""Analysis above the models: verification, metrics, certificates, comparison."""
