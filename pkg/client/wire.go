package client

import (
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"
)

// The few etcdserverpb messages the member commands use, encoded by hand with the field numbers
// of go.etcd.io/etcd/api/v3/etcdserverpb/rpc.proto (v3.7.1). The generated package would pull in
// the descriptors of etcd's whole API, grpc-gateway's and Google's annotations, and descriptor
// reflection, all initialised at start-up and again on first use: about two milliseconds of a
// command that must finish in five. wire_test.go checks every message against the generated
// types, both ways. Field numbers are etcd's wire format: never change them.

// Full method names of the RPCs used.
const (
	methodMemberAdd     = "/etcdserverpb.Cluster/MemberAdd"
	methodMemberRemove  = "/etcdserverpb.Cluster/MemberRemove"
	methodMemberUpdate  = "/etcdserverpb.Cluster/MemberUpdate"
	methodMemberList    = "/etcdserverpb.Cluster/MemberList"
	methodMemberPromote = "/etcdserverpb.Cluster/MemberPromote"
	methodStatus        = "/etcdserverpb.Maintenance/Status"
	methodAuthenticate  = "/etcdserverpb.Auth/Authenticate"
	methodMoveLeader    = "/etcdserverpb.Maintenance/MoveLeader"
)

// request is a message sent: its wire encoding.
type request []byte

// memberListRequest is MemberListRequest{linearizable = 1}.
func memberListRequest(linearizable bool) request {
	return appendBool(nil, 1, linearizable)
}

// memberAddRequest is MemberAddRequest{peerURLs = 1, isLearner = 2}.
func memberAddRequest(peerURLs []string, learner bool) request {
	return appendBool(appendStrings(nil, 1, peerURLs), 2, learner)
}

// memberIDRequest is MemberRemoveRequest and MemberPromoteRequest: {ID = 1}.
func memberIDRequest(id uint64) request {
	return appendUint(nil, 1, id)
}

// memberUpdateRequest is MemberUpdateRequest{ID = 1, peerURLs = 2}.
func memberUpdateRequest(id uint64, peerURLs []string) request {
	return appendStrings(appendUint(nil, 1, id), 2, peerURLs)
}

// authenticateRequest is AuthenticateRequest{name = 1, password = 2}.
func authenticateRequest(name, password string) request {
	return appendString(appendString(nil, 1, name), 2, password)
}

// authenticateAnswer is AuthenticateResponse{header = 1, token = 2}; the header is not read.
type authenticateAnswer struct {
	Token string
}

func (a *authenticateAnswer) unmarshal(b []byte) error {
	return eachField(b, func(f field) error {
		if f.num == 2 && f.typ == protowire.BytesType {
			a.Token = string(f.bytes)
		}
		return nil
	})
}

// A proto3 scalar at its zero value is not written, as the generated code does.

func appendUint(b []byte, num protowire.Number, v uint64) []byte {
	if v == 0 {
		return b
	}
	return protowire.AppendVarint(protowire.AppendTag(b, num, protowire.VarintType), v)
}

func appendBool(b []byte, num protowire.Number, v bool) []byte {
	return appendUint(b, num, protowire.EncodeBool(v))
}

func appendString(b []byte, num protowire.Number, v string) []byte {
	if v == "" {
		return b
	}
	return protowire.AppendString(protowire.AppendTag(b, num, protowire.BytesType), v)
}

func appendStrings(b []byte, num protowire.Number, vs []string) []byte {
	for _, v := range vs {
		b = protowire.AppendString(protowire.AppendTag(b, num, protowire.BytesType), v)
	}
	return b
}

// The field of a Cluster response that holds the members: MemberAddResponse has the new member
// at 2, so its members are at 3; every other response has them at 2.
const (
	fieldMembers    protowire.Number = 2
	fieldAddMembers protowire.Number = 3
)

// clusterAnswer is any Cluster response: {header = 1, members = membersField}, and for
// MemberAddResponse also {member = 2}.
type clusterAnswer struct {
	membersField protowire.Number
	Header       Header
	Member       Member
	Members      []Member
}

func (a *clusterAnswer) unmarshal(b []byte) error {
	return eachField(b, func(f field) error {
		switch {
		case f.num == 1 && f.typ == protowire.BytesType:
			return a.Header.unmarshal(f.bytes)
		case f.num == a.membersField && f.typ == protowire.BytesType:
			var m Member
			if err := m.unmarshal(f.bytes); err != nil {
				return err
			}
			a.Members = append(a.Members, m)
		case f.num == 2 && f.typ == protowire.BytesType:
			return a.Member.unmarshal(f.bytes)
		}
		return nil
	})
}

// ignoredAnswer is a response whose body is not read: a dry run's answer is in its header.
type ignoredAnswer struct{}

func (*ignoredAnswer) unmarshal([]byte) error { return nil }

// unmarshal reads ResponseHeader{cluster_id = 1, member_id = 2, raft_term = 4}.
func (h *Header) unmarshal(b []byte) error {
	return eachField(b, func(f field) error {
		if f.typ == protowire.VarintType {
			switch f.num {
			case 1:
				h.ClusterID = f.varint
			case 2:
				h.MemberID = f.varint
			case 4:
				h.RaftTerm = f.varint
			}
		}
		return nil
	})
}

// unmarshal reads Member{ID = 1, name = 2, peerURLs = 3, clientURLs = 4, isLearner = 5}. The
// started flag and the leader are not on the wire; the caller sets them.
func (m *Member) unmarshal(b []byte) error {
	return eachField(b, func(f field) error {
		switch {
		case f.num == 1 && f.typ == protowire.VarintType:
			m.ID = f.varint
		case f.num == 2 && f.typ == protowire.BytesType:
			m.Name = string(f.bytes)
		case f.num == 3 && f.typ == protowire.BytesType:
			m.PeerURLs = append(m.PeerURLs, string(f.bytes))
		case f.num == 4 && f.typ == protowire.BytesType:
			m.ClientURLs = append(m.ClientURLs, string(f.bytes))
		case f.num == 5 && f.typ == protowire.VarintType:
			m.IsLearner = protowire.DecodeBool(f.varint)
		}
		return nil
	})
}

// statusAnswer is StatusResponse{header = 1, version = 2, dbSize = 3, leader = 4, raftIndex = 5,
// raftTerm = 6, raftAppliedIndex = 7, errors = 8, dbSizeInUse = 9, isLearner = 10}.
type statusAnswer struct {
	Header           Header
	Version          string
	DBSize           int64
	Leader           uint64
	RaftIndex        uint64
	RaftTerm         uint64
	RaftAppliedIndex uint64
	Errors           []string
	DBSizeInUse      int64
	IsLearner        bool
}

func (s *statusAnswer) unmarshal(b []byte) error {
	return eachField(b, func(f field) error {
		switch {
		case f.num == 1 && f.typ == protowire.BytesType:
			return s.Header.unmarshal(f.bytes)
		case f.num == 2 && f.typ == protowire.BytesType:
			s.Version = string(f.bytes)
		case f.num == 8 && f.typ == protowire.BytesType:
			s.Errors = append(s.Errors, string(f.bytes))
		case f.typ != protowire.VarintType:
		case f.num == 3:
			s.DBSize = int64(f.varint)
		case f.num == 4:
			s.Leader = f.varint
		case f.num == 5:
			s.RaftIndex = f.varint
		case f.num == 6:
			s.RaftTerm = f.varint
		case f.num == 7:
			s.RaftAppliedIndex = f.varint
		case f.num == 9:
			s.DBSizeInUse = int64(f.varint)
		case f.num == 10:
			s.IsLearner = protowire.DecodeBool(f.varint)
		}
		return nil
	})
}

// field is one field of a message; varint or bytes is set according to typ.
type field struct {
	num    protowire.Number
	typ    protowire.Type
	varint uint64
	bytes  []byte
}

// eachField calls fn for every field of the message b, skipping over fields of other wire types,
// so fields added by later etcd versions are ignored as the generated code ignores them.
func eachField(b []byte, fn func(field) error) error {
	// Every pass consumes at least the tag's byte, so the loop ends.
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return fmt.Errorf("bad message: %w", protowire.ParseError(n))
		}
		b = b[n:]
		f := field{num: num, typ: typ}
		switch typ {
		case protowire.VarintType:
			f.varint, n = protowire.ConsumeVarint(b)
		case protowire.BytesType:
			f.bytes, n = protowire.ConsumeBytes(b)
		default:
			n = protowire.ConsumeFieldValue(num, typ, b)
		}
		if n < 0 {
			return fmt.Errorf("bad message: %w", protowire.ParseError(n))
		}
		b = b[n:]
		if err := fn(f); err != nil {
			return err
		}
	}
	return nil
}

// codec carries requests and answers as the bytes above, in place of grpc's protobuf codec.
type codec struct{}

// Name is what the content type says: the bytes are protobuf, as etcd expects.
func (codec) Name() string { return "proto" }

func (codec) Marshal(v any) ([]byte, error) {
	r, ok := v.(request)
	if !ok {
		return nil, fmt.Errorf("cannot encode %T", v)
	}
	return r, nil
}

func (codec) Unmarshal(data []byte, v any) error {
	a, ok := v.(interface{ unmarshal([]byte) error })
	if !ok {
		return fmt.Errorf("cannot decode into %T", v)
	}
	return a.unmarshal(data)
}

// methodSnapshot is Maintenance.Snapshot, a server stream.
const methodSnapshot = "/etcdserverpb.Maintenance/Snapshot"

// snapshotRequest is SnapshotRequest{}: it has no fields.
func snapshotRequest() request { return request{} }

// snapshotAnswer is SnapshotResponse{header = 1, remaining_bytes = 2, blob = 3, version = 4}.
type snapshotAnswer struct {
	Header         Header
	RemainingBytes uint64
	Blob           []byte
	Version        string
}

func (s *snapshotAnswer) unmarshal(b []byte) error {
	*s = snapshotAnswer{}
	return eachField(b, func(f field) error {
		switch {
		case f.num == 1 && f.typ == protowire.BytesType:
			return s.Header.unmarshal(f.bytes)
		case f.num == 2 && f.typ == protowire.VarintType:
			s.RemainingBytes = f.varint
		case f.num == 3 && f.typ == protowire.BytesType:
			// grpc may reuse the message buffer for the next message: keep a copy.
			s.Blob = append([]byte(nil), f.bytes...)
		case f.num == 4 && f.typ == protowire.BytesType:
			s.Version = string(f.bytes)
		}
		return nil
	})
}
