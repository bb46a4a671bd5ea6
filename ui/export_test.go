package ui

import "net/http"

// HandleGet registers h as the API's GET path, as the server's own
// handlers are (tests: one that panics).
func (s *Server) HandleGet(path string, h func(*http.Request) (any, error)) { s.get(path, h) }
