// Package observed holds tests of what an exporter shows of a pipeline
// that runs on a real broker: they need prom and kafkax together, which
// no module users install may (prom must not import a connector, nor a
// connector prom), so they live in the lab's module.
package observed
