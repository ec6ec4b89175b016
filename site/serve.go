package site

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"
)

// Handler serves a built site from dir. It adds no headers a static host
// would not, so what a test sees here is what a static host serves.
func Handler(dir string) http.Handler {
	files := http.FileServer(http.Dir(dir))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			http.Error(w, "the site is read-only", http.StatusMethodNotAllowed)
			return
		}
		files.ServeHTTP(w, r)
	})
}

// Serve serves dir on addr until ctx ends; ready, when set, gets the URL
// once the listener is open.
func Serve(ctx context.Context, dir, addr string, ready func(url string)) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("serve the site on %s: %w (choose another address with -serve)", addr, err)
	}
	srv := &http.Server{Handler: Handler(dir), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	if ready != nil {
		ready("http://" + ln.Addr().String() + "/")
	}
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve the site: %w", err)
	}
	return nil
}
