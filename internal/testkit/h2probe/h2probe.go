package h2probe

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// frame is a gRPC message on the wire: a flag byte, a 4-byte length, the message.
func frame(msg []byte) []byte {
	b := make([]byte, 5, 5+len(msg))
	binary.BigEndian.PutUint32(b[1:], uint32(len(msg)))
	return append(b, msg...)
}

func headers(fields ...string) ([]byte, error) {
	var block bytes.Buffer
	enc := hpack.NewEncoder(&block)
	for i := 0; i+1 < len(fields); i += 2 {
		if err := enc.WriteField(hpack.HeaderField{Name: fields[i], Value: fields[i+1]}); err != nil {
			return nil, err
		}
	}
	return block.Bytes(), nil
}

// next reads the next frame from the other side, answers it where HTTP/2 requires an answer
// (settings and pings are acknowledged), and counts it in pings if it is a ping.
func next(fr *http2.Framer, pings *int) (http2.Frame, error) {
	f, err := fr.ReadFrame()
	if err != nil {
		return nil, err
	}
	switch f := f.(type) {
	case *http2.SettingsFrame:
		if !f.IsAck() {
			err = fr.WriteSettingsAck()
		}
	case *http2.PingFrame:
		if !f.IsAck() {
			*pings++
			err = fr.WritePing(true, f.Data)
		}
	}
	return f, err
}

// Call makes one unary gRPC call of path with msg (already encoded) on conn, and returns how many
// pings the server sent before the call's trailers.
func Call(conn net.Conn, authority, path string, msg []byte) (int, error) {
	if _, err := io.WriteString(conn, http2.ClientPreface); err != nil {
		return 0, err
	}
	fr := http2.NewFramer(conn, conn)
	block, err := headers(":method", "POST", ":scheme", "http", ":path", path,
		":authority", authority, "content-type", "application/grpc", "te", "trailers")
	if err != nil {
		return 0, err
	}
	if err := fr.WriteSettings(); err != nil {
		return 0, err
	}
	if err := fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: block, EndHeaders: true}); err != nil {
		return 0, err
	}
	if err := fr.WriteData(1, true, frame(msg)); err != nil {
		return 0, err
	}
	pings := 0
	for {
		f, err := next(fr, &pings)
		if err != nil {
			return pings, fmt.Errorf("reading the answer: %w", err)
		}
		switch f := f.(type) {
		case *http2.HeadersFrame:
			if f.StreamEnded() {
				return pings, nil
			}
		case *http2.GoAwayFrame:
			return pings, fmt.Errorf("the server ended the connection: %v", f.ErrCode)
		}
	}
}

// Answer serves one gRPC call on conn with msg (already encoded) as its answer, and returns how
// many pings the client sent until it ended the connection.
func Answer(conn net.Conn, msg []byte) (int, error) {
	preface := make([]byte, len(http2.ClientPreface))
	if _, err := io.ReadFull(conn, preface); err != nil {
		return 0, err
	}
	if string(preface) != http2.ClientPreface {
		return 0, errors.New("not an HTTP/2 client")
	}
	fr := http2.NewFramer(conn, conn)
	if err := fr.WriteSettings(); err != nil {
		return 0, err
	}
	pings, answered := 0, false
	for {
		f, err := next(fr, &pings)
		if err != nil {
			if answered && (errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed)) {
				return pings, nil
			}
			return pings, err
		}
		switch f := f.(type) {
		case *http2.DataFrame:
			if f.StreamEnded() && !answered {
				if err := answer(fr, f.StreamID, msg); err != nil {
					return pings, err
				}
				answered = true
			}
		case *http2.GoAwayFrame:
			return pings, nil
		}
	}
}

func answer(fr *http2.Framer, stream uint32, msg []byte) error {
	head, err := headers(":status", "200", "content-type", "application/grpc")
	if err != nil {
		return err
	}
	trailers, err := headers("grpc-status", "0")
	if err != nil {
		return err
	}
	if err := fr.WriteHeaders(http2.HeadersFrameParam{StreamID: stream, BlockFragment: head, EndHeaders: true}); err != nil {
		return err
	}
	if err := fr.WriteData(stream, false, frame(msg)); err != nil {
		return err
	}
	return fr.WriteHeaders(http2.HeadersFrameParam{StreamID: stream, BlockFragment: trailers, EndHeaders: true, EndStream: true})
}
