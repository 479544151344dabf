// SPDX-License-Identifier: Apache-2.0
// Must NOT link: with the heap gate, operator new becomes "undefined reference to
// `__wrap__Znwj'". tests/firmware/CMakeLists.txt expects exactly that.
int main() {
  int* volatile p = new int(1);
  return *p;
}
