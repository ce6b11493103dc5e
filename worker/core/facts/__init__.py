"""Facts of a batch computed once and shared by every clause: geometries, validity, CRS, claims."""
