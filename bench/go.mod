module github.com/sluicehq/sluice/bench

go 1.26.0

require (
	github.com/destel/rill v0.8.0
	github.com/eapache/channels v1.1.0
	github.com/samber/lo v1.53.0
	github.com/sluicehq/sluice v0.1.0
	github.com/smallnest/chanx v1.2.0
	github.com/sourcegraph/conc v0.3.0
	go.uber.org/goleak v1.3.0
)

require (
	github.com/eapache/queue v1.1.0 // indirect
	github.com/nats-io/nats.go v1.55.0
	github.com/sluicehq/sluice/cmd/sluice v0.1.0
	github.com/sluicehq/sluice/connect/clickhousex v0.1.0
	github.com/sluicehq/sluice/connect/kafkax v0.1.0
	github.com/sluicehq/sluice/connect/natsx v0.1.0
	github.com/sluicehq/sluice/prom v0.1.0
	github.com/prometheus/client_golang v1.25.0
	github.com/twmb/franz-go v1.22.2
	github.com/twmb/franz-go/pkg/kadm v1.19.0
	github.com/beorn7/perks v1.0.1 // indirect
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/munnerz/goautoneg v0.0.0-20191010083416-a7dc8b61c822 // indirect
	github.com/prometheus/client_model v0.6.3 // indirect
	github.com/prometheus/common v0.72.0 // indirect
	github.com/prometheus/procfs v0.22.0 // indirect
	go.uber.org/atomic v1.7.0 // indirect
	go.uber.org/multierr v1.9.0 // indirect
	golang.org/x/text v0.22.0 // indirect
)
