"""Rendering the JSON documents: the entries' text, each command's view, the table, markdown and CSV
renderers, emitting with gates, the HTML page (:mod:`calibcli.report.html`) and the report family registry."""
