package dash

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"testing"
	"time"
)

// browser is a headless Chromium driven over the Chrome DevTools Protocol
// through --remote-debugging-pipe: the browser reads commands from its file
// descriptor 3 and writes replies and events to descriptor 4, each message
// a JSON object followed by a NUL byte. No websocket, no port.
type browser struct {
	cmd    *exec.Cmd
	stderr bytes.Buffer
	toB    *os.File // our end of its fd 3
	fromB  *os.File // our end of its fd 4

	mu      sync.Mutex
	nextID  int64
	pending map[int64]chan reply
	readErr error

	readerDone chan struct{} // closed when readLoop has returned
}

type reply struct {
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// startBrowser runs the Chromium binary at path, headless, with a fresh
// profile in dir. The caller must call close.
func startBrowser(path, dir string) (*browser, error) {
	cmdR, cmdW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	evR, evW, err := os.Pipe()
	if err != nil {
		cmdR.Close()
		cmdW.Close()
		return nil, err
	}
	b := &browser{toB: cmdW, fromB: evR, pending: map[int64]chan reply{}, readerDone: make(chan struct{})}
	b.cmd = exec.Command(path,
		"--headless", "--remote-debugging-pipe",
		// As root, Chromium refuses to start with its sandbox; the page it
		// loads is our own, on loopback.
		"--no-sandbox",
		"--disable-gpu", "--disable-dev-shm-usage", "--disable-quic", "--no-first-run",
		// This machine has no network: keep Chromium from trying.
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--disable-default-apps", "--disable-extensions", "--mute-audio", "--hide-scrollbars",
		"--window-size=1400,900", "--user-data-dir="+dir, "about:blank")
	b.cmd.ExtraFiles = []*os.File{cmdR, evW} // fds 3 and 4
	b.cmd.Stderr = &b.stderr
	b.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // its helpers die with it
	err = b.cmd.Start()
	cmdR.Close() // the child's ends: ours are no longer needed
	evW.Close()
	if err != nil {
		cmdW.Close()
		evR.Close()
		return nil, err
	}
	go b.readLoop()
	return b, nil
}

// readLoop hands each reply to the call waiting for it; events are
// ignored. It returns when the browser closes its end or close closes ours.
func (b *browser) readLoop() {
	defer close(b.readerDone)
	r := bufio.NewReader(b.fromB)
	var err error
	for {
		var msg []byte
		msg, err = r.ReadBytes(0)
		if err != nil {
			break
		}
		var m struct {
			ID int64 `json:"id"`
			reply
		}
		if json.Unmarshal(msg[:len(msg)-1], &m) != nil || m.ID == 0 {
			continue
		}
		b.mu.Lock()
		ch := b.pending[m.ID]
		delete(b.pending, m.ID)
		b.mu.Unlock()
		if ch != nil {
			ch <- m.reply // buffered: never blocks
		}
	}
	b.mu.Lock()
	b.readErr = err
	for id, ch := range b.pending {
		close(ch)
		delete(b.pending, id)
	}
	b.mu.Unlock()
}

// call sends one command, to the page of session (or to the browser if
// session is ""), and waits for its reply.
func (b *browser) call(ctx context.Context, session, method string, params any, result any) error {
	b.mu.Lock()
	if b.readErr != nil {
		b.mu.Unlock()
		return fmt.Errorf("%s: browser gone: %v", method, b.readErr)
	}
	b.nextID++
	id := b.nextID
	ch := make(chan reply, 1)
	b.pending[id] = ch
	b.mu.Unlock()

	msg := map[string]any{"id": id, "method": method, "params": params}
	if session != "" {
		msg["sessionId"] = session
	}
	body, err := json.Marshal(msg)
	if err != nil {
		return err
	}
	if _, err := b.toB.Write(append(body, 0)); err != nil {
		return fmt.Errorf("%s: %v", method, err)
	}
	select {
	case r, ok := <-ch:
		switch {
		case !ok:
			return fmt.Errorf("%s: browser gone before replying", method)
		case r.Error != nil:
			return fmt.Errorf("%s: %s (%d)", method, r.Error.Message, r.Error.Code)
		case result != nil:
			return json.Unmarshal(r.Result, result)
		}
		return nil
	case <-ctx.Done():
		b.mu.Lock()
		delete(b.pending, id)
		b.mu.Unlock()
		return fmt.Errorf("%s: %w", method, ctx.Err())
	}
}

// open loads url in a new tab and returns the session that drives it.
func (b *browser) open(ctx context.Context, url string) (string, error) {
	var target struct {
		TargetID string `json:"targetId"`
	}
	if err := b.call(ctx, "", "Target.createTarget", map[string]any{"url": url}, &target); err != nil {
		return "", err
	}
	var attached struct {
		SessionID string `json:"sessionId"`
	}
	err := b.call(ctx, "", "Target.attachToTarget", map[string]any{"targetId": target.TargetID, "flatten": true}, &attached)
	return attached.SessionID, err
}

// eval evaluates a JavaScript expression in the page and decodes its
// value, which must survive JSON.
func (b *browser) eval(ctx context.Context, session, expr string, v any) error {
	var res struct {
		Result struct {
			Value json.RawMessage `json:"value"`
		} `json:"result"`
		Exception *struct {
			Text      string `json:"text"`
			Exception struct {
				Description string `json:"description"`
			} `json:"exception"`
		} `json:"exceptionDetails"`
	}
	err := b.call(ctx, session, "Runtime.evaluate", map[string]any{"expression": expr, "returnByValue": true}, &res)
	if err != nil {
		return err
	}
	if res.Exception != nil {
		return fmt.Errorf("evaluating %q: %s %s", expr, res.Exception.Text, res.Exception.Exception.Description)
	}
	return json.Unmarshal(res.Result.Value, v)
}

// screenshot returns the page as a PNG.
func (b *browser) screenshot(ctx context.Context, session string) ([]byte, error) {
	var res struct {
		Data []byte `json:"data"` // base64 in JSON, decoded by encoding/json
	}
	err := b.call(ctx, session, "Page.captureScreenshot", map[string]any{"format": "png"}, &res)
	return res.Data, err
}

// close asks the browser to quit, kills its process group if it has not
// within 5 s, and waits for it and for readLoop.
func (b *browser) close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = b.call(ctx, "", "Browser.close", nil, nil)
	b.toB.Close()
	exited := make(chan error, 1)
	go func() { exited <- b.cmd.Wait() }()
	var err error
	select {
	case err = <-exited:
	case <-time.After(5 * time.Second):
		_ = syscall.Kill(-b.cmd.Process.Pid, syscall.SIGKILL)
		err = errors.Join(errors.New("browser did not quit within 5 s; killed"), <-exited)
	}
	b.fromB.Close() // unblocks readLoop if a helper still holds the pipe
	<-b.readerDone
	return err
}

// openBoard serves h, starts the browser at path and opens the board in
// it; the browser is closed when the test ends.
func openBoard(ctx context.Context, t *testing.T, path string, h http.Handler) (*browser, string) {
	t.Helper()
	srv, _ := serve(t, h)
	b, err := startBrowser(path, t.TempDir())
	if err != nil {
		t.Fatalf("starting %s: %v", path, err)
	}
	t.Cleanup(func() {
		if err := b.close(); err != nil {
			t.Errorf("closing the browser: %v\n%s", err, b.stderr.String())
		}
	})
	session, err := b.open(ctx, srv.URL+"/")
	if err != nil {
		t.Fatalf("opening the page: %v\n%s", err, b.stderr.String())
	}
	return b, session
}
