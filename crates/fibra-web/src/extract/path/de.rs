//! The serde deserializer of path parameters: the whole set as one value, a sequence or a map,
//! each value parsed from its text.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, DeserializeSeed, IntoDeserializer, MapAccess, SeqAccess, Visitor};
use serde::forward_to_deserialize_any;

/// Why path parameters did not deserialize.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum PathError {
    /// The type wants another number of values than the route has.
    WrongNumberOfParameters {
        /// The route's.
        got: usize,
        /// The type's.
        expected: usize,
    },
    /// A value does not parse as the type at its place.
    ParseErrorAtKey {
        /// The parameter's name.
        key: String,
        /// Its (decoded) value.
        value: String,
        /// The type it should have been.
        expected_type: &'static str,
    },
    /// A value is not UTF-8 once percent-decoded.
    InvalidUtf8InPathParam {
        /// The parameter's name.
        key: String,
    },
    /// The type cannot come from path parameters.
    UnsupportedType {
        /// Its name.
        name: &'static str,
    },
    /// Another error of the type's `Deserialize` (a missing field, an unknown variant).
    Message(String),
}

impl fmt::Display for PathError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PathError::WrongNumberOfParameters { got, expected } => write!(
                f,
                "Wrong number of path arguments for `Path`. Expected {expected} but got {got}"
            ),
            PathError::ParseErrorAtKey {
                key,
                value,
                expected_type,
            } => write!(
                f,
                "Cannot parse `{key}` with value `{value}` to a `{expected_type}`"
            ),
            PathError::InvalidUtf8InPathParam { key } => write!(f, "Invalid UTF-8 in `{key}`"),
            PathError::UnsupportedType { name } => {
                write!(f, "Unsupported type `{name}` for path parameters")
            }
            PathError::Message(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for PathError {}

impl de::Error for PathError {
    fn custom<T: fmt::Display>(msg: T) -> Self {
        PathError::Message(msg.to_string())
    }
}

type Params<'a> = [(&'a str, Cow<'a, str>)];

/// All the parameters: one value, a tuple or sequence, a struct or map.
pub(super) struct PathDeserializer<'a> {
    params: &'a Params<'a>,
}

impl<'a> PathDeserializer<'a> {
    pub(super) fn new(params: &'a Params<'a>) -> Self {
        PathDeserializer { params }
    }
    fn single(&self) -> Result<ValueDeserializer<'a>, PathError> {
        match self.params {
            [(key, value)] => Ok(ValueDeserializer { key, value }),
            _ => Err(PathError::WrongNumberOfParameters {
                got: self.params.len(),
                expected: 1,
            }),
        }
    }
}

macro_rules! single_value {
    ($($method:ident)*) => {$(
        fn $method<V: Visitor<'de>>(self, v: V) -> Result<V::Value, PathError> {
            self.single()?.$method(v)
        }
    )*};
}

impl<'de> de::Deserializer<'de> for PathDeserializer<'_> {
    type Error = PathError;

    single_value! {
        deserialize_any deserialize_bool deserialize_i8 deserialize_i16 deserialize_i32
        deserialize_i64 deserialize_i128 deserialize_u8 deserialize_u16 deserialize_u32
        deserialize_u64 deserialize_u128 deserialize_f32 deserialize_f64 deserialize_char
        deserialize_str deserialize_string deserialize_bytes deserialize_byte_buf
        deserialize_identifier
    }

    fn deserialize_unit<V: Visitor<'de>>(self, v: V) -> Result<V::Value, PathError> {
        v.visit_unit()
    }
    fn deserialize_unit_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        v: V,
    ) -> Result<V::Value, PathError> {
        v.visit_unit()
    }
    fn deserialize_ignored_any<V: Visitor<'de>>(self, v: V) -> Result<V::Value, PathError> {
        v.visit_unit()
    }
    fn deserialize_option<V: Visitor<'de>>(self, v: V) -> Result<V::Value, PathError> {
        v.visit_some(self)
    }
    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        v: V,
    ) -> Result<V::Value, PathError> {
        v.visit_newtype_struct(self)
    }
    fn deserialize_seq<V: Visitor<'de>>(self, v: V) -> Result<V::Value, PathError> {
        v.visit_seq(Values {
            params: self.params.iter(),
        })
    }
    fn deserialize_tuple<V: Visitor<'de>>(self, len: usize, v: V) -> Result<V::Value, PathError> {
        if len != self.params.len() {
            return Err(PathError::WrongNumberOfParameters {
                got: self.params.len(),
                expected: len,
            });
        }
        self.deserialize_seq(v)
    }
    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        len: usize,
        v: V,
    ) -> Result<V::Value, PathError> {
        self.deserialize_tuple(len, v)
    }
    fn deserialize_map<V: Visitor<'de>>(self, v: V) -> Result<V::Value, PathError> {
        v.visit_map(Entries {
            params: self.params.iter(),
            value: None,
        })
    }
    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _fields: &'static [&'static str],
        v: V,
    ) -> Result<V::Value, PathError> {
        self.deserialize_map(v)
    }
    fn deserialize_enum<V: Visitor<'de>>(
        self,
        name: &'static str,
        variants: &'static [&'static str],
        v: V,
    ) -> Result<V::Value, PathError> {
        self.single()?.deserialize_enum(name, variants, v)
    }
}

struct Values<'a> {
    params: std::slice::Iter<'a, (&'a str, Cow<'a, str>)>,
}

impl<'de> SeqAccess<'de> for Values<'_> {
    type Error = PathError;
    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, PathError> {
        match self.params.next() {
            Some((key, value)) => seed.deserialize(ValueDeserializer { key, value }).map(Some),
            None => Ok(None),
        }
    }
    fn size_hint(&self) -> Option<usize> {
        Some(self.params.len())
    }
}

struct Entries<'a> {
    params: std::slice::Iter<'a, (&'a str, Cow<'a, str>)>,
    value: Option<&'a (&'a str, Cow<'a, str>)>,
}

impl<'de> MapAccess<'de> for Entries<'_> {
    type Error = PathError;
    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, PathError> {
        match self.params.next() {
            Some(entry) => {
                self.value = Some(entry);
                let key: de::value::StrDeserializer<'_, PathError> = entry.0.into_deserializer();
                seed.deserialize(key).map(Some)
            }
            None => Ok(None),
        }
    }
    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, PathError> {
        match self.value.take() {
            Some((key, value)) => seed.deserialize(ValueDeserializer { key, value }),
            None => Err(PathError::Message("value without a key".into())),
        }
    }
}

/// One parameter's value, parsed as what the visitor asks for.
struct ValueDeserializer<'a> {
    key: &'a str,
    value: &'a Cow<'a, str>,
}

impl ValueDeserializer<'_> {
    fn parse_error(&self, expected_type: &'static str) -> PathError {
        PathError::ParseErrorAtKey {
            key: self.key.to_owned(),
            value: self.value.to_string(),
            expected_type,
        }
    }
}

macro_rules! parse_value {
    ($($method:ident => $visit:ident($ty:ty))*) => {$(
        fn $method<V: Visitor<'de>>(self, v: V) -> Result<V::Value, PathError> {
            let parsed: $ty = self.value.parse().map_err(|_| self.parse_error(stringify!($ty)))?;
            v.$visit(parsed)
        }
    )*};
}

impl<'de> de::Deserializer<'de> for ValueDeserializer<'_> {
    type Error = PathError;

    parse_value! {
        deserialize_bool => visit_bool(bool)
        deserialize_i8 => visit_i8(i8)
        deserialize_i16 => visit_i16(i16)
        deserialize_i32 => visit_i32(i32)
        deserialize_i64 => visit_i64(i64)
        deserialize_i128 => visit_i128(i128)
        deserialize_u8 => visit_u8(u8)
        deserialize_u16 => visit_u16(u16)
        deserialize_u32 => visit_u32(u32)
        deserialize_u64 => visit_u64(u64)
        deserialize_u128 => visit_u128(u128)
        deserialize_f32 => visit_f32(f32)
        deserialize_f64 => visit_f64(f64)
        deserialize_char => visit_char(char)
    }

    fn deserialize_any<V: Visitor<'de>>(self, v: V) -> Result<V::Value, PathError> {
        v.visit_str(self.value)
    }
    fn deserialize_option<V: Visitor<'de>>(self, v: V) -> Result<V::Value, PathError> {
        v.visit_some(self)
    }
    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        v: V,
    ) -> Result<V::Value, PathError> {
        v.visit_newtype_struct(self)
    }
    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _variants: &'static [&'static str],
        v: V,
    ) -> Result<V::Value, PathError> {
        let variant: de::value::StrDeserializer<'_, PathError> =
            self.value.as_ref().into_deserializer();
        v.visit_enum(variant)
    }
    fn deserialize_seq<V: Visitor<'de>>(self, _v: V) -> Result<V::Value, PathError> {
        Err(PathError::UnsupportedType { name: "a sequence" })
    }
    fn deserialize_map<V: Visitor<'de>>(self, _v: V) -> Result<V::Value, PathError> {
        Err(PathError::UnsupportedType { name: "a map" })
    }

    forward_to_deserialize_any! {
        str string bytes byte_buf unit unit_struct tuple tuple_struct struct identifier
        ignored_any
    }
}
