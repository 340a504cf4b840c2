package dash

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"
	"testing"

	"github.com/sluicehq/sluice"
)

// Many clients stream while pipelines are added to and removed from the
// board (under -race): every event is a whole View naming only pipelines
// that were on the board, a client that does not read holds up no other,
// and Close ends every stream.
func TestStreamsSurviveAddAndRemoveAndEndOnClose(t *testing.T) {
	ps := []*sluice.Pipeline{finished(t, "a"), finished(t, "b"), finished(t, "c")}
	board := Handler(ps[0])
	srv, c := serve(t, board)

	// A client that never reads its stream.
	idle, err := c.Get(srv.URL + "/events?every=100ms")
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Body.Close()

	const clients, events = 8, 5
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	for range clients {
		wg.Go(func() {
			resp, err := c.Get(srv.URL + "/events?every=100ms")
			if err != nil {
				errs <- err
				return
			}
			defer resp.Body.Close()
			r := bufio.NewReader(resp.Body)
			for range events {
				data, err := readEvent(t, r)
				if err != nil {
					errs <- err
					return
				}
				var v View
				if err := json.Unmarshal([]byte(data), &v); err != nil {
					errs <- fmt.Errorf("event %q: %v", data, err)
					return
				}
				for _, pv := range v.Pipelines {
					if pv.Name != "a" && pv.Name != "b" && pv.Name != "c" || len(pv.Stages) != 3 {
						errs <- fmt.Errorf("view of an unknown pipeline: %+v", pv)
						return
					}
				}
			}
		})
	}
	stop := make(chan struct{})
	var churn sync.WaitGroup
	churn.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			p := ps[1+i%2]
			board.Add(p)
			board.View()
			board.Remove(p)
		}
	})
	wg.Wait()
	close(stop)
	churn.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	board.Close()
	// The idle client's stream ends too once it reads what was sent.
	if _, err := io.Copy(io.Discard, idle.Body); err != nil {
		t.Fatal(err)
	}
	pollUntil(t, "no stream is open", func() bool { return board.streams.Load() == 0 })
	if resp, err := c.Get(srv.URL + "/events?every=bogus"); err != nil || resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("every=bogus: %v, %v; want 400", resp, err)
	} else {
		resp.Body.Close()
	}
}
