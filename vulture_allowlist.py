"""Names vulture cannot see being used (``make test`` runs vulture over src/fairprobe and this
file, [tool.vulture] in pyproject.toml). Each is reached by name at run time; keep the list
short and say where from."""
# ruff: noqa: B018, F821

# cli/twosource.py: flags read through typer's ctx.params to build the options objects
proxy_features
api_cols
ui_cols
