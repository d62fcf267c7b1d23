"""Development tooling (benchmarks of the app, test drivers); not imported by the app."""
