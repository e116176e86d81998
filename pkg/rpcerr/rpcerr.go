package rpcerr

import (
	"context"
	"errors"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Error is an error that crosses the wire as a gRPC status. A server answer that is not in the
// registry is an *Error too, with the code and message the server sent.
type Error struct {
	Code    codes.Code
	Message string
}

func (e *Error) Error() string { return e.Message }

// GRPCStatus lets grpc and status.FromError send and see the error as the status it stands for.
func (e *Error) GRPCStatus() *status.Status { return status.New(e.Code, e.Message) }

// Is matches by message alone: the code may differ between clusterd and etcd for one error.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Message == e.Message
}

// byMessage holds every entry by its message; it is filled at package init only.
var byMessage = map[string]*Error{}

func register(code codes.Code, message string) *Error {
	if _, dup := byMessage[message]; dup {
		// Two entries with one text could not be told apart on the wire.
		panic("rpcerr: message registered twice: " + message)
	}
	e := &Error{Code: code, Message: message}
	byMessage[message] = e
	return e
}

// etcd registers one of etcd's errors (an rpctypes ErrGRPC* status) under its code and message.
func etcd(err error) *Error {
	st := status.Convert(err)
	return register(st.Code(), st.Message())
}

// Lookup returns the registered error with that message, or nil.
func Lookup(message string) *Error { return byMessage[message] }

// Status turns err into the status a server answers with: a registered error (bare, wrapped,
// or a status carrying its message) as its entry, an ended context as ErrTimeout (the outcome is
// unknown), another status as it came, anything else as Unknown with its text, as etcd does.
func Status(err error) error {
	if err == nil {
		return nil
	}
	err = FromStatus(err)
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		err = ErrTimeout
	}
	var e *Error
	if errors.As(err, &e) {
		return status.Error(e.Code, e.Message)
	}
	if st, ok := status.FromError(err); ok {
		return st.Err()
	}
	return status.Error(codes.Unknown, err.Error())
}

// FromStatus returns the registered error whose message err's status carries, whatever its
// code, and err itself otherwise.
func FromStatus(err error) error {
	st, ok := status.FromError(err)
	if !ok {
		return err
	}
	if e := Lookup(st.Message()); e != nil {
		return e
	}
	return err
}
