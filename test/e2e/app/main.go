// Command app is the one program of the end-to-end tests' images, built
// static: `app pause` is the pods' sandbox process (it waits for a signal),
// and `app serve` is a consumer workload that answers on :8080 with what it
// sees of a secret from inside its pod, as JSON: the environment variable
// $APP_ENV names and the file $APP_FILE names. `app cat FILE` prints a
// file, for a container to show one to the test.
package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: app pause|serve|cat FILE")
		os.Exit(2)
	}
	switch os.Args[1] {
	case "pause":
		sig := make(chan os.Signal, 1)
		signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
		<-sig
	case "serve":
		serve()
	case "cat":
		data, err := os.ReadFile(os.Args[2])
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		_, _ = os.Stdout.Write(data)
	default:
		os.Exit(2)
	}
}

// Seen is what serve answers.
type Seen struct {
	Env   string `json:"env"`
	File  string `json:"file"`
	Error string `json:"error,omitempty"`
}

func serve() {
	http.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) {
		s := Seen{Env: os.Getenv(os.Getenv("APP_ENV"))}
		if f := os.Getenv("APP_FILE"); f != "" {
			data, err := os.ReadFile(f)
			if err != nil {
				s.Error = err.Error()
			}
			s.File = string(data)
		}
		_ = json.NewEncoder(w).Encode(s)
	})
	srv := &http.Server{Addr: ":8080", ReadHeaderTimeout: 5 * time.Second}
	go func() {
		sig := make(chan os.Signal, 1)
		signal.Notify(sig, syscall.SIGTERM)
		<-sig
		_ = srv.Close()
	}()
	_ = srv.ListenAndServe()
}
