package refs

// Dir returns the store directory the refs and op log live in.
func (s *Store) Dir() string { return s.dir }
