"""Operating memory safely: the tools an operator uses on a running
store, beside the library's read and write paths. Each module holds one tool."""
