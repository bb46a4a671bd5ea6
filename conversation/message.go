package conversation

import (
	"bytes"
	"encoding/json"
	"strings"
)

// wireMessage is one message in any of the shapes understood: OpenAI chat
// messages, Anthropic messages, Gemini CLI session messages, Gemini API
// contents, SWE-agent history entries and trajectory steps. decodeWire fills
// it; byte slices point into the document and live only while the Message is
// built. A field of an unexpected JSON type is left blank.
type wireMessage struct {
	ID, Role, Type, Timestamp string
	Content, Parts            content
	OpenAICalls               []wireToolCall // tool_calls
	GeminiCalls               []wireToolCall // toolCalls
	Function                  *wireToolCall  // legacy function_call
	ToolCallID                string
	ToolCallIDs               []string
	Action, Observation       *string
	Response, Thought         string
}

// wireToolCall is a tool call in any shape: OpenAI {id, function: {name,
// arguments}}, Gemini CLI {id, name, args, result, status}, Gemini API
// functionCall {name, args} and functionResponse {name, response}.
type wireToolCall struct {
	ID, Name, Status string
	Args             []byte // arguments, input or args
	Result           []byte // Gemini CLI result
	Response         []byte // Gemini API functionResponse.response
}

// decodeWire reads the valid JSON object b as a message.
func decodeWire(b []byte) wireMessage {
	var w wireMessage
	_, _ = scanObject(b, 0, 0, func(key []byte, v int) (int, error) {
		switch string(key) {
		case "id":
			return stringAt(b, v, 1, &w.ID)
		case "role":
			return stringAt(b, v, 1, &w.Role)
		case "type":
			return stringAt(b, v, 1, &w.Type)
		case "timestamp":
			return stringAt(b, v, 1, &w.Timestamp)
		case "tool_call_id":
			return stringAt(b, v, 1, &w.ToolCallID)
		case "response":
			return stringAt(b, v, 1, &w.Response)
		case "thought":
			return stringAt(b, v, 1, &w.Thought)
		case "content":
			c, end := parseContent(b, v)
			w.Content = c
			return end, nil
		case "parts":
			c, end := parseContent(b, v)
			w.Parts = c
			return end, nil
		case "action":
			return optStringAt(b, v, &w.Action)
		case "observation":
			return optStringAt(b, v, &w.Observation)
		case "tool_call_ids":
			w.ToolCallIDs = nil
			return eachElement(b, v, func(e []byte) {
				if e[0] == '"' {
					w.ToolCallIDs = append(w.ToolCallIDs, unquote(e))
				}
			})
		case "tool_calls":
			w.OpenAICalls = nil
			return eachElement(b, v, func(e []byte) {
				if e[0] == '{' {
					w.OpenAICalls = append(w.OpenAICalls, decodeToolCall(e))
				}
			})
		case "toolCalls":
			w.GeminiCalls = nil
			return eachElement(b, v, func(e []byte) {
				if e[0] == '{' {
					w.GeminiCalls = append(w.GeminiCalls, decodeToolCall(e))
				}
			})
		case "function_call":
			end, err := skipValue(b, v, 1)
			w.Function = nil
			if err == nil && b[v] == '{' {
				tc := decodeToolCall(b[v:end])
				w.Function = &tc
			}
			return end, err
		}
		return skipValue(b, v, 1)
	})
	return w
}

// decodeToolCall reads the valid JSON object b as a tool call.
func decodeToolCall(b []byte) wireToolCall { return decodeToolCallNested(b, true) }

func decodeToolCallNested(b []byte, outer bool) wireToolCall {
	var tc wireToolCall
	var fn *wireToolCall
	_, _ = scanObject(b, 0, 0, func(key []byte, v int) (int, error) {
		switch string(key) {
		case "id":
			return stringAt(b, v, 1, &tc.ID)
		case "name":
			return stringAt(b, v, 1, &tc.Name)
		case "status":
			return stringAt(b, v, 1, &tc.Status)
		}
		end, err := skipValue(b, v, 1)
		if err != nil {
			return end, err
		}
		switch string(key) {
		case "arguments", "input", "args":
			tc.Args = b[v:end]
		case "result":
			tc.Result = b[v:end]
		case "response":
			tc.Response = b[v:end]
		case "function":
			fn = nil
			if outer && b[v] == '{' {
				f := decodeToolCallNested(b[v:end], false)
				fn = &f
			}
		}
		return end, nil
	})
	if fn != nil { // OpenAI: {id, type: function, function: {name, arguments}}
		if fn.Name != "" {
			tc.Name = fn.Name
		}
		if fn.Args != nil {
			tc.Args = fn.Args
		}
	}
	return tc
}

// optStringAt reads a string member that may be absent (nil) or of another
// type (nil).
func optStringAt(b []byte, v int, dst **string) (int, error) {
	var s string
	end, err := stringAt(b, v, 1, &s)
	*dst = nil
	if err == nil && b[v] == '"' {
		*dst = &s
	}
	return end, err
}

// eachElement calls fn with every element of the array at b[v]; any other
// value is skipped.
func eachElement(b []byte, v int, fn func(elem []byte)) (int, error) {
	if b[v] != '[' {
		return skipValue(b, v, 1)
	}
	return scanArray(b, v, 1, func(e int) (int, error) {
		end, err := skipValue(b, e, 2)
		if err == nil {
			fn(b[e:end])
		}
		return end, err
	})
}

// block is one content block: Anthropic (text, thinking, tool_use,
// tool_result, image), OpenAI content parts, Gemini API parts.
type block struct {
	Type, Text, ID, Name, ToolUseID string
	Input                           []byte // tool_use input (points into the document)
	Result                          string // tool_result content flattened to text
	IsError                         bool
	FunctionCall                    *wireToolCall
	FunctionResponse                *wireToolCall
}

// content is a message content member: a string, an array of blocks (or
// strings), or a single block object.
type content struct {
	set    bool // present and not null
	text   string
	blocks []block
}

// parseContent reads the valid JSON value at b[v] as message content and
// returns the offset just past it.
func parseContent(b []byte, v int) (content, int) {
	var c content
	var end int
	switch b[v] {
	case '"':
		end, _ = skipString(b, v)
		c.text = unquote(b[v:end])
	case '[':
		end, _ = scanArray(b, v, 1, func(e int) (int, error) {
			switch b[e] {
			case '"':
				end, err := skipString(b, e)
				if err == nil {
					c.blocks = append(c.blocks, block{Type: "text", Text: unquote(b[e:end])})
				}
				return end, err
			case '{':
				bl, end, err := parseBlock(b, e)
				if err == nil {
					c.blocks = append(c.blocks, bl)
				}
				return end, err
			}
			return skipValue(b, e, 2)
		})
	case '{':
		var bl block
		bl, end, _ = parseBlock(b, v)
		c.blocks = []block{bl}
	default: // null, number or boolean
		end, _ = skipValue(b, v, 1)
		if b[v] == 'n' {
			return c, end
		}
		c.text = string(b[v:end])
	}
	c.set = true
	return c, end
}

// parseBlock reads the JSON object at b[i] as a content block.
func parseBlock(b []byte, i int) (block, int, error) {
	var bl block
	var result []byte
	end, err := scanObject(b, i, 1, func(key []byte, v int) (int, error) {
		switch string(key) {
		case "type":
			return stringAt(b, v, 2, &bl.Type)
		case "text":
			return stringAt(b, v, 2, &bl.Text)
		case "id":
			return stringAt(b, v, 2, &bl.ID)
		case "name":
			return stringAt(b, v, 2, &bl.Name)
		case "tool_use_id":
			return stringAt(b, v, 2, &bl.ToolUseID)
		}
		end, err := skipValue(b, v, 2)
		if err != nil {
			return end, err
		}
		val := b[v:end]
		switch string(key) {
		case "is_error":
			bl.IsError = string(val) == "true"
		case "input":
			bl.Input = val
		case "content":
			result = val
		case "functionCall", "functionResponse":
			var tc *wireToolCall
			if val[0] == '{' {
				t := decodeToolCall(val)
				tc = &t
			}
			if string(key) == "functionCall" {
				bl.FunctionCall = tc
			} else {
				bl.FunctionResponse = tc
			}
		}
		return end, nil
	})
	if err == nil && result != nil && (bl.Type == "tool_result" || bl.Type == "function_call_output") {
		bl.Result = flattenText(result, 0)
	}
	return bl, end, err
}

// normalizeRole maps agent-specific role names onto the common ones.
func normalizeRole(r string) string {
	r = strings.ToLower(strings.TrimSpace(r))
	switch r {
	case "gemini", "model", "ai", "bot":
		return "assistant"
	case "human":
		return "user"
	case "function":
		return "tool"
	}
	return r
}

// fromWire builds the Message of one decoded message.
func fromWire(w *wireMessage) Message {
	m := Message{ID: w.ID, Timestamp: w.Timestamp}
	role := w.Role
	if role == "" {
		role = w.Type
	}
	m.Role = normalizeRole(role)
	m.addContent(&w.Content)
	m.addContent(&w.Parts)
	for _, tc := range w.OpenAICalls {
		m.addToolCall(ToolCall{ID: tc.ID, Name: tc.Name, Input: argsToInput(tc.Args)})
	}
	if f := w.Function; f != nil && f.Name != "" {
		m.addToolCall(ToolCall{ID: f.ID, Name: f.Name, Input: argsToInput(f.Args)})
	}
	for _, gc := range w.GeminiCalls {
		m.addToolCall(ToolCall{ID: gc.ID, Name: gc.Name, Input: argsToInput(gc.Args)})
		if hasValue(gc.Result) || gc.Status != "" {
			m.addToolResult(ToolResult{
				ToolUseID: gc.ID,
				Content:   flattenText(gc.Result, 0),
				IsError:   gc.Status == "error",
			})
		}
	}
	if m.Role == "" && (w.Action != nil || w.Observation != nil) {
		// SWE-agent trajectory step: {response, thought, action, observation}.
		m.Role = "assistant"
		m.appendText(w.Response)
		if m.Text == "" {
			m.appendText(w.Thought)
		}
		if w.Action != nil {
			in, _ := json.Marshal(*w.Action)
			m.addToolCall(ToolCall{Name: "action", Input: in})
		}
		if w.Observation != nil {
			m.addToolResult(ToolResult{Content: *w.Observation})
		}
	}
	if m.Role == "tool" && len(m.ToolResults) == 0 {
		// OpenAI tool message: its content is the result.
		id := w.ToolCallID
		if id == "" && len(w.ToolCallIDs) > 0 {
			id = w.ToolCallIDs[0]
		}
		m.ToolResults = []ToolResult{{ToolUseID: id, Content: m.Text}}
		m.Text = ""
	}
	m.finishRole()
	return m
}

// finishRole gives a user message that only carries tool results the role
// "tool", in every format.
func (m *Message) finishRole() {
	if m.Role == "user" && m.Text == "" && len(m.ToolCalls) == 0 && len(m.ToolResults) > 0 {
		m.Role = "tool"
	}
	if m.Role == "" {
		m.Role = "unknown"
	}
}

func (m *Message) appendText(s string) {
	if s == "" {
		return
	}
	if m.Text != "" {
		m.Text += "\n"
	}
	m.Text += s
}

func (m *Message) addToolCall(tc ToolCall) { m.ToolCalls = append(m.ToolCalls, tc) }

func (m *Message) addToolResult(tr ToolResult) { m.ToolResults = append(m.ToolResults, tr) }

// addContent adds text blocks to Text (thinking excluded), tool_use blocks to
// ToolCalls and tool_result blocks to ToolResults, in order.
func (m *Message) addContent(c *content) {
	if !c.set {
		return
	}
	// Collect the texts and join them once: a message may have many blocks.
	var texts []string
	if m.Text != "" {
		texts = append(texts, m.Text)
	}
	if c.text != "" {
		texts = append(texts, c.text)
	}
	defer func() { m.Text = strings.Join(texts, "\n") }()
	appendText := func(s string) {
		if s != "" {
			texts = append(texts, s)
		}
	}
	for i := range c.blocks {
		b := &c.blocks[i]
		switch b.Type {
		case "thinking", "redacted_thinking", "reasoning":
		case "tool_use", "server_tool_use", "function_call":
			m.addToolCall(ToolCall{ID: b.ID, Name: b.Name, Input: argsToInput(b.Input)})
		case "tool_result", "function_call_output":
			m.addToolResult(ToolResult{ToolUseID: b.ToolUseID, Content: b.Result, IsError: b.IsError})
		case "image", "image_url", "input_image":
			appendText("[image]")
		case "document", "file", "input_file":
			appendText("[document]")
		default:
			switch {
			case b.FunctionCall != nil:
				fc := b.FunctionCall
				m.addToolCall(ToolCall{ID: fc.ID, Name: fc.Name, Input: argsToInput(fc.Args)})
			case b.FunctionResponse != nil:
				fr := b.FunctionResponse
				m.addToolResult(ToolResult{ToolUseID: fr.ID, Content: flattenText(fr.Response, 0)})
			default:
				appendText(b.Text)
			}
		}
	}
}

func hasValue(raw []byte) bool {
	raw = trimWS(raw)
	return len(raw) > 0 && string(raw) != "null"
}

// isJSON reports whether b holds exactly one JSON value.
func isJSON(b []byte) bool {
	end, err := skipValue(b, 0, 0)
	return err == nil && skipSpace(b, end) == len(b)
}

// argsToInput returns tool arguments as a fresh copy of valid JSON, or nil.
// OpenAI sends arguments as a JSON-encoded string, unwrapped here when it
// holds valid JSON; pretty-printed input is compacted.
func argsToInput(raw []byte) json.RawMessage {
	raw = trimWS(raw)
	if len(raw) == 0 || !isJSON(raw) {
		return nil
	}
	if raw[0] == '"' {
		if t := trimWS([]byte(unquote(raw))); len(t) > 0 && isJSON(t) {
			raw = t
		}
	}
	if bytes.IndexByte(raw, '\n') >= 0 {
		// Pretty-printed (a raw newline cannot be inside a JSON string).
		var buf bytes.Buffer
		if json.Compact(&buf, raw) == nil {
			return buf.Bytes()
		}
	}
	return append(json.RawMessage(nil), raw...)
}

// flattenText renders a tool result (string, block array, Gemini function
// response, anything) as text.
func flattenText(raw []byte, depth int) string {
	raw = trimWS(raw)
	if len(raw) == 0 {
		return ""
	}
	if !isJSON(raw) {
		return string(raw)
	}
	return flattenAt(raw, depth)
}

// flattenKeys are the members that hold the text of a result object, by
// preference: Anthropic text blocks, Gemini {output} and {error} responses.
var flattenKeys = [...]string{"text", "output", "content", "functionResponse", "response", "error"}

// flattenAt renders the valid JSON value v as text.
func flattenAt(v []byte, depth int) string {
	if depth > 8 {
		return compactString(v)
	}
	switch v[0] {
	case '"':
		return unquote(v)
	case 'n':
		return ""
	case '[':
		var parts []string
		_, _ = scanArray(v, 0, 0, func(e int) (int, error) {
			end, err := skipValue(v, e, 1)
			if err == nil {
				if t := flattenAt(v[e:end], depth+1); t != "" {
					parts = append(parts, t)
				}
			}
			return end, err
		})
		return strings.Join(parts, "\n")
	case '{':
		var typ string
		var fields [len(flattenKeys)][]byte
		_, _ = scanObject(v, 0, 0, func(key []byte, e int) (int, error) {
			if string(key) == "type" {
				return stringAt(v, e, 1, &typ)
			}
			end, err := skipValue(v, e, 1)
			if err == nil {
				for k, name := range flattenKeys {
					if string(key) == name {
						fields[k] = v[e:end]
					}
				}
			}
			return end, err
		})
		switch typ {
		case "image", "image_url", "input_image":
			return "[image]"
		case "document":
			return "[document]"
		}
		for _, f := range fields {
			if f != nil {
				if t := flattenAt(f, depth+1); t != "" {
					return t
				}
			}
		}
		return compactString(v)
	}
	return string(v)
}

func compactString(raw []byte) string {
	var buf bytes.Buffer
	if json.Compact(&buf, raw) != nil {
		return string(raw)
	}
	return buf.String()
}
