"""What ``langgraph dev`` serves over HTTP: the served graph and its trust boundary."""
