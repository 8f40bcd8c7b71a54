"""Fault kinds that act on any track's replicas: on their processes, connections and writes."""
